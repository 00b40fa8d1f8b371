"""Path helpers shared by the file tools: resolving, workspace checks, glob matching."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

SKIP_DIRS: frozenset[str] = frozenset({".git", "node_modules", ".venv", "__pycache__"})
"""Directory names Glob and Grep never descend into."""

_GLOB_MAGIC = re.compile(r"[*?\[{]")


def resolve_path(raw: str, working_dir: Path) -> Path:
    """`raw` as an absolute path with `~` expanded and every symlink resolved.

    Relative paths are taken from `working_dir`. A path that does not exist yet is
    resolved through its nearest existing parent (`Path.resolve` is non-strict), so a
    new file below a symlinked directory lands where the symlink points.
    """
    path = Path(os.path.expanduser(raw.strip()))
    if not path.is_absolute():
        path = Path(working_dir).expanduser() / path
    return path.resolve()


def is_inside(path: Path, working_dir: Path) -> bool:
    """Whether resolved `path` is `working_dir` (resolved here) or below it."""
    return Path(path).is_relative_to(Path(working_dir).resolve())


def display_path(path: Path, working_dir: Path) -> str:
    """`path` relative to the working dir when inside it, else absolute."""
    root = Path(working_dir).resolve()
    path = Path(path)
    if path.is_relative_to(root):
        rel = path.relative_to(root).as_posix()
        return rel or "."
    return str(path)


def has_glob_magic(text: str) -> bool:
    return bool(_GLOB_MAGIC.search(text))


def split_glob(pattern: str) -> tuple[str, str]:
    """Split a glob into its literal leading directories and the rest.

    `src/**/*.py` → (`src`, `**/*.py`); `/etc/*.conf` → (`/etc`, `*.conf`);
    `*.md` → (``, `*.md`); a pattern without magic → (pattern, ``).
    """
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        if has_glob_magic(part):
            literal = "/".join(parts[:i])
            if i == 1 and parts[0] == "":
                literal = "/"
            return literal, "/".join(parts[i:])
    return pattern, ""


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compile a glob over `/`-separated relative paths into a regex.

    `*` and `?` never cross `/`; `**` as a whole segment spans any number of
    directories (including none); `[abc]`, `[!abc]` and `{a,b}` alternatives work.
    """
    return re.compile(r"\A" + _translate(pattern) + r"\Z", re.DOTALL)


def _split_braces(body: str) -> list[str]:
    alternatives, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            alternatives.append(body[start:i])
            start = i + 1
    alternatives.append(body[start:])
    return alternatives


def _matching_brace(pattern: str, start: int) -> int:
    depth = 0
    for i in range(start, len(pattern)):
        if pattern[i] == "{":
            depth += 1
        elif pattern[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        at_segment_start = i == 0 or pattern[i - 1] == "/"
        if ch == "*" and pattern.startswith("**", i) and at_segment_start:
            end = i + 2
            if end == n:  # trailing `**`: everything below
                out.append(".*")
                i = end
                continue
            if pattern[end] == "/":  # `**/`: zero or more directories
                out.append("(?:.*/)?")
                i = end + 1
                continue
        if ch == "*":
            while i < n and pattern[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif ch == "{":
            end = _matching_brace(pattern, i)
            if end == -1:
                out.append(re.escape(ch))
            else:
                alts = _split_braces(pattern[i + 1 : end])
                out.append("(?:" + "|".join(_translate(a) for a in alts) + ")")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)

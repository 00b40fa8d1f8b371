"""Static analysis of Bash commands: the safe read-only list and permission rules.

`is_safe_readonly_command` decides whether a command may run without asking (and
concurrently with other read-only calls); `rule_for` proposes the rule an "allow
always" answer stores; `rule_matches` checks a command against a stored rule. All
three share one small shell lexer that knows quoting, escapes, comments, operators,
redirections, here-docs and substitutions, so that a quoted `|` or `;` is never
mistaken for an operator and a real one is never missed.

This is a policy aid, not a sandbox: anything the lexer cannot analyse is treated as
unsafe (it needs a permission prompt).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "NETWORK_PROGRAMS",
    "ShellSyntaxError",
    "is_safe_readonly_command",
    "lex",
    "names_git_dir",
    "network_program",
    "rule_for",
    "rule_matches",
    "segments",
]


class ShellSyntaxError(ValueError):
    pass


# ---------------------------------------------------------------- lexer

_SEPARATORS = {";", "&&", "||", "|", "|&", "&", "\n", ";;", ";&", ";;&", "(", ")"}
_REDIRECTS = {"<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<", "<<-", "<<<"}
_OPERATORS = sorted(_SEPARATORS | _REDIRECTS, key=len, reverse=True)
_OPERATOR_CHARS = set(";&|<>()\n")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")


@dataclass
class Token:
    kind: str  # "word" | "op"
    value: str
    quoted: bool = False
    expands: bool = False
    """The word holds `$...`, `$'...'`, a substitution or an unquoted `{` (brace expansion)."""
    globs: bool = False
    """The word holds an unquoted `*`, `?` or `[`: it may expand to file names, and a file
    named `-delete` turns `find . ?delete` into an option."""


@dataclass
class Lexed:
    tokens: list[Token] = field(default_factory=list)
    substitutions: list[str] = field(default_factory=list)
    """Bodies of `$(...)`, backticks and `<(...)`/`>(...)`, for recursive checks."""
    has_substitution: bool = False
    has_redirection: bool = False
    has_heredoc: bool = False


def _balanced(cmd: str, start: int) -> int:
    """Index just past the `)` closing the `(` at `start - 1` (quotes respected)."""
    depth, i, n = 1, start, len(cmd)
    while i < n:
        ch = cmd[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'":
            end = cmd.find("'", i + 1)
            if end == -1:
                raise ShellSyntaxError("unterminated single quote")
            i = end + 1
            continue
        if ch == '"':
            i = _skip_double(cmd, i + 1)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ShellSyntaxError("unterminated substitution")


def _skip_double(cmd: str, i: int) -> int:
    n = len(cmd)
    while i < n:
        ch = cmd[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            return i + 1
        if ch == "$" and cmd.startswith("$(", i):
            i = _balanced(cmd, i + 2)
            continue
        i += 1
    raise ShellSyntaxError("unterminated double quote")


def _brace_end(cmd: str, i: int) -> int:
    """Index of the `}` closing a `${` whose body starts at `i`."""
    depth, n = 1, len(cmd)
    while i < n:
        ch = cmd[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'":
            end = cmd.find("'", i + 1)
            if end == -1:
                raise ShellSyntaxError("unterminated single quote")
            i = end + 1
            continue
        if ch == '"':
            i = _skip_double(cmd, i + 1)
            continue
        if cmd.startswith("$(", i):
            i = _balanced(cmd, i + 2)
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ShellSyntaxError("unterminated ${...}")


def _scan_expansions(body: str) -> list[str | None]:
    """Substitutions in double-quote-like text (a `"..."` body or an unquoted here-doc):
    the body of each `$(...)` / backtick, and None for each other `$` expansion."""
    found: list[str | None] = []
    j = 0
    while j < len(body):
        if body[j] == "\\":
            j += 2
            continue
        if body.startswith("$(", j):
            close = _balanced(body, j + 2)
            found.append(body[j + 2 : close - 1])
            j = close
            continue
        if body[j] == "`":
            close = _backtick_end(body, j + 1)
            found.append(body[j + 1 : close])
            j = close + 1
            continue
        if body[j] == "$":
            found.append(None)
        j += 1
    return found


def _backtick_end(cmd: str, i: int) -> int:
    n = len(cmd)
    while i < n:
        if cmd[i] == "\\":
            i += 2
            continue
        if cmd[i] == "`":
            return i
        i += 1
    raise ShellSyntaxError("unterminated backquote")


_ANSI_C_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                  "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}  # fmt: skip
_ANSI_C_ESCAPE = re.compile(
    r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})"
    r"|U([0-9A-Fa-f]{1,8})|c(.))",
    re.DOTALL,
)


def _decode_ansi_c(body: str) -> str:
    """The text bash makes of a `$'...'` body (escapes as in bash(1), QUOTING)."""

    def one(m: re.Match[str]) -> str:
        simple, octal, hex2, hex4, hex8, control = m.groups()
        if simple is not None:
            return _ANSI_C_SIMPLE[simple]
        if control is not None:
            return chr(ord(control) & 0x1F)
        number = octal or hex2 or hex4 or hex8
        code = int(number, 8 if octal else 16)
        return chr(code) if code <= 0x10FFFF else "\ufffd"

    return _ANSI_C_ESCAPE.sub(one, body)


def lex(cmd: str) -> Lexed:
    """Tokenize a Bash command line. Raises ShellSyntaxError when it cannot."""
    out = Lexed()
    word: list[str] = []
    in_word = False
    quoted = False
    expands = False
    globs = False
    pending_heredocs: list[tuple[str, bool, bool]] = []  # delimiter, strip tabs, quoted
    expect_heredoc_word: bool | None = None  # strip_tabs flag while waiting for the delimiter
    i, n = 0, len(cmd)

    def finish_word() -> None:
        nonlocal word, in_word, quoted, expands, globs, expect_heredoc_word
        if in_word:
            value = "".join(word)
            if expect_heredoc_word is not None:
                pending_heredocs.append((value, expect_heredoc_word, quoted))
                expect_heredoc_word = None
            out.tokens.append(Token("word", value, quoted, expands, globs))
        word, in_word, quoted, expands, globs = [], False, False, False, False

    def substitution(body: str) -> None:
        nonlocal expands
        out.has_substitution = True
        out.substitutions.append(body)
        expands = True

    while i < n:
        ch = cmd[i]
        if ch in " \t\r":
            finish_word()
            i += 1
        elif ch == "\\":
            if i + 1 < n and cmd[i + 1] == "\n":  # line continuation
                i += 2
                continue
            if i + 1 < n:
                word.append(cmd[i + 1])
            in_word, quoted = True, True
            i += 2
        elif ch == "#" and not in_word:
            end = cmd.find("\n", i)
            i = n if end == -1 else end
        elif ch == "'":
            end = cmd.find("'", i + 1)
            if end == -1:
                raise ShellSyntaxError("unterminated single quote")
            word.append(cmd[i + 1 : end])
            in_word, quoted = True, True
            i = end + 1
        elif ch == '"':
            end = _skip_double(cmd, i + 1)
            body = cmd[i + 1 : end - 1]
            for inner in _scan_expansions(body):
                if inner is None:
                    expands = True
                else:
                    substitution(inner)
            word.append(re.sub(r'\\([$`"\\\n])', r"\1", body))
            in_word, quoted = True, True
            i = end
        elif ch == "`":
            end = _backtick_end(cmd, i + 1)
            substitution(cmd[i + 1 : end])
            word.append(cmd[i : end + 1])
            in_word = True
            i = end + 1
        elif ch == "$" and cmd.startswith("$'", i):
            j = i + 2
            while j < n and cmd[j] != "'":
                j += 2 if cmd[j] == "\\" else 1
            if j >= n:
                raise ShellSyntaxError("unterminated $'...' string")
            # The word bash runs is the decoded one (`$'-\x64elete'` is `-delete`); it also
            # counts as an expansion, so checked programs never take it on trust.
            word.append(_decode_ansi_c(cmd[i + 2 : j]))
            in_word, quoted, expands = True, True, True
            i = j + 1
        elif ch == "$" and cmd.startswith("$(", i):
            end = _balanced(cmd, i + 2)
            substitution(cmd[i + 2 : end - 1])
            word.append(cmd[i:end])
            in_word = True
            i = end
        elif ch == "$" and i + 1 < n and (cmd[i + 1].isalnum() or cmd[i + 1] in "_{@*#?!-$"):
            expands = True
            if cmd[i + 1] == "{":
                end = _brace_end(cmd, i + 2)
                body = cmd[i + 2 : end]
                if "$(" in body or "`" in body or "<(" in body or ">(" in body:
                    substitution(body)  # `${X:-$(cmd)}` runs cmd
                word.append(cmd[i : end + 1])
                i = end + 1
            else:
                word.append(ch)
                i += 1
            in_word = True
        elif ch in "<>" and cmd.startswith("(", i + 1):
            end = _balanced(cmd, i + 2)
            substitution(cmd[i + 2 : end - 1])
            word.append(cmd[i:end])
            in_word = True
            i = end
        elif ch in _OPERATOR_CHARS:
            op = next(o for o in _OPERATORS if cmd.startswith(o, i))
            if op in _REDIRECTS and in_word and not quoted and "".join(word).isdigit():
                word, in_word = [], False  # `2>`: the digits name a file descriptor
            finish_word()
            if op in _REDIRECTS:
                out.has_redirection = True
                if op in ("<<", "<<-"):
                    out.has_heredoc = True
                    expect_heredoc_word = op == "<<-"
                elif op == "<<<":
                    out.has_heredoc = True
            out.tokens.append(Token("op", op))
            i += len(op)
            if op == "\n" and pending_heredocs:
                i, bodies = _heredoc_bodies(cmd, i, pending_heredocs)
                pending_heredocs.clear()
                for body in bodies:  # an unquoted delimiter: the body is expanded
                    for inner in _scan_expansions(body):
                        if inner is not None:
                            substitution(inner)
        else:
            if ch == "{":
                expands = True
            elif ch in "*?[":
                globs = True
            word.append(ch)
            in_word = True
            i += 1
    finish_word()
    return out


def _heredoc_bodies(
    cmd: str, i: int, heredocs: list[tuple[str, bool, bool]]
) -> tuple[int, list[str]]:
    """Skip the here-document bodies starting at `i`; return the end and the bodies
    that bash expands (those whose delimiter was not quoted)."""
    expanded: list[str] = []
    for delimiter, strip_tabs, quoted in heredocs:
        start = i
        body_end = len(cmd)
        while i < len(cmd):
            end = cmd.find("\n", i)
            line = cmd[i:] if end == -1 else cmd[i:end]
            line_start = i
            i = len(cmd) if end == -1 else end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                body_end = line_start
                break
        if not quoted:
            expanded.append(cmd[start:body_end])
    return i, expanded


def segments(lexed: Lexed) -> list[list[Token]]:
    """The simple commands of a lexed line: words only, redirections and their targets dropped."""
    result: list[list[Token]] = [[]]
    tokens = lexed.tokens
    skip_next_word = False
    for token in tokens:
        if token.kind == "op":
            if token.value in _REDIRECTS:
                skip_next_word = True
            else:
                result.append([])
            continue
        if skip_next_word:
            skip_next_word = False
            continue
        result[-1].append(token)
    return [seg for seg in result if seg]


def _words(segment: list[Token]) -> list[str]:
    return [t.value for t in segment]


# ---------------------------------------------------------------- safe list


def _always(_args: list[str]) -> bool:
    return True


def _short_flags(arg: str) -> str:
    """The letters of a bundled short-option word (`-la` → `la`), else ``."""
    return arg[1:] if arg.startswith("-") and not arg.startswith("--") else ""


def _is_long_option(arg: str, options: tuple[str, ...]) -> bool:
    """`arg` is one of the long `options`, also abbreviated (getopt accepts `--out=x`)."""
    name = arg.split("=", 1)[0]
    if not name.startswith("--") or len(name) < 3:
        return False
    return any(o.startswith(name) for o in options)


def _refuse(short: str = "", *long_options: str) -> Callable[[list[str]], bool]:
    """A check refusing the short option letters (bundled or not) and the long options."""

    def check(args: list[str]) -> bool:
        return not any(
            any(ch in short for ch in _short_flags(a)) or _is_long_option(a, long_options)
            for a in args
        )

    return check


_FIND_ACTIONS = {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0",
                 "-fprintf", "-fls"}  # fmt: skip


def _find_ok(args: list[str]) -> bool:
    return not any(a in _FIND_ACTIONS for a in args)


def _uniq_ok(args: list[str]) -> bool:
    return sum(1 for a in args if not a.startswith("-")) <= 1  # a 2nd operand is an output file


def _date_ok(args: list[str]) -> bool:
    if not _refuse("s", "--set")(args):
        return False
    # `date MMDDhhmm` sets the clock; only `+FORMAT` operands are harmless.
    return all(a.startswith(("-", "+")) for a in args)


def _hostname_ok(args: list[str]) -> bool:
    allowed = {"-s", "-f", "-i", "-I", "-d", "-a", "-A", "--short", "--fqdn", "--long",
               "--ip-address", "--all-ip-addresses", "--alias", "--domain"}  # fmt: skip
    return all(a in allowed for a in args)  # anything else may set the hostname


_GIT_BRANCH_FLAGS = {
    "-a", "-r", "-v", "-vv", "-l", "--all", "--remotes", "--list", "--verbose",
    "--show-current", "--no-color", "--color",
}  # fmt: skip


def _git_ok(args: list[str]) -> bool:
    while args and args[0] == "--no-pager":
        args = args[1:]
    if not args:
        return False
    sub, rest = args[0], args[1:]
    if any(_is_long_option(a, ("--output",)) or a.startswith("--output") for a in rest):
        return False
    if sub in ("status", "diff", "log", "show", "rev-parse", "ls-files", "blame", "describe",
               "shortlog", "ls-tree", "cat-file", "show-ref", "whatchanged"):  # fmt: skip
        return True
    if sub == "grep":  # -O/--open-files-in-pager runs a program
        return _refuse("O", "--open-files-in-pager")(rest)
    if sub == "branch":
        return all(a in _GIT_BRANCH_FLAGS for a in rest)
    if sub == "remote":
        return all(a in ("-v", "--verbose") for a in rest)
    if sub == "stash":
        return rest[:1] == ["list"]
    if sub == "tag":
        return not rest or rest[0] in ("-l", "--list")
    return False


SAFE_PROGRAMS: dict[str, Callable[[list[str]], bool]] = {
    **dict.fromkeys(
        """
        ls cat head tail wc pwd echo printf grep egrep fgrep stat du df which whoami id
        basename dirname realpath readlink uname true false cut nl tr cmp diff comm seq
        md5sum sha1sum sha256sum sha512sum cksum strings column type test [
        uptime nproc arch sleep cd
        """.split(),
        _always,
    ),
    "rg": _refuse("", "--pre", "--hostname-bin"),  # both run a program
    "find": _find_ok,
    "tree": _refuse("oR", "--output"),  # -o FILE; -R writes 00Tree.html files
    "file": _refuse("C", "--compile"),
    "sort": _refuse("o", "--output", "--compress-program"),
    "uniq": _uniq_ok,
    "date": _date_ok,
    "hostname": _hostname_ok,
    "git": _git_ok,
    # BSD-style `ps e` prints every process's environment, the server's keys included
    "ps": lambda args: not any(not a.startswith("-") and "e" in a for a in args),
    # jq's `env` / `$ENV` read the environment
    "jq": lambda args: not any("env" in a.lower() for a in args),
}
"""Program → check of its arguments; a command is safe when every segment passes."""


def _find_follows(args: list[str]) -> bool:
    return not any(a in ("-L", "-follow", "-files0-from") for a in args)


def _diff_follows(args: list[str]) -> bool:
    # `diff -r` reads through the symlinks it meets unless told not to
    recursive = not _refuse("r", "--recursive")(args)
    return not recursive or any(a == "--no-dereference" for a in args)


_HASH_CHECK = _refuse("c", "--check")
"""`-c FILE` hashes every file FILE names."""

INDIRECT_READS: dict[str, Callable[[list[str]], bool]] = {
    "grep": _refuse("R", "--dereference-recursive"),
    "egrep": _refuse("R", "--dereference-recursive"),
    "fgrep": _refuse("R", "--dereference-recursive"),
    "rg": _refuse("L", "--follow"),
    "find": _find_follows,
    "du": _refuse("L", "--dereference", "--files0-from"),
    "ls": _refuse("L", "--dereference"),
    "tree": _refuse("l", "--fromfile"),
    "diff": _diff_follows,
    "wc": _refuse("", "--files0-from"),
    "sort": _refuse("", "--files0-from"),
    "file": _refuse("f", "--files-from"),
    "strings": lambda args: not any(a.startswith("@") for a in args),  # @FILE: more options
    **dict.fromkeys(("md5sum", "sha1sum", "sha256sum", "sha512sum", "cksum"), _HASH_CHECK),
}
"""Options that make a read-only program read files it was not named on the command
line: following the symlinks it meets while walking a folder (`grep -R`, `find -L`,
`rg -L`, `du -L`, `ls -L`, `tree -l`, `diff -r`), or reading file names from a file
(`--files0-from`, `md5sum -c`, `file -f`). Such a file may lie outside the workspace, so
these commands are not read-only: they ask (and Plan mode refuses them). A check passes
when the arguments use none of them."""

_SAFE_SEPARATORS = {";", "&&", "||", "|", "\n"}


def is_safe_readonly_command(cmd: str, working_dir: Path | None = None) -> bool:
    """True when every segment of `cmd` is a known read-only command.

    Output or input redirection, here-docs, command/process substitution, subshells,
    background jobs, variable assignments, unknown programs and parameter expansions
    (`$HOME`, `$ANTHROPIC_API_KEY`) all make it unsafe; so do file-name globs in the
    arguments of a program whose options are checked, and, given `working_dir`, an
    argument naming a path outside it (`cat ~/.ssh/id_rsa` is asked, not run).
    """
    try:
        lexed = lex(cmd.strip())
    except ShellSyntaxError:
        return False
    if lexed.has_substitution or lexed.has_redirection or lexed.has_heredoc:
        return False
    if any(t.kind == "op" and t.value not in _SAFE_SEPARATORS for t in lexed.tokens):
        return False
    segs = segments(lexed)
    if not segs:
        return False
    for seg in segs:
        program, *args = _words(seg)
        if any(t.expands for t in seg) or _ASSIGNMENT.match(program):
            return False
        if program not in SAFE_PROGRAMS or (seg[0].globs and program != "["):
            return False
        check = SAFE_PROGRAMS[program]
        # A glob could smuggle a forbidden flag (`find . ?delete` with a file named
        # `-delete`) past the argument check: programs that have one get literal words.
        if check is not _always and any(t.globs for t in seg[1:]):
            return False
        if not check(args) or not INDIRECT_READS.get(program, _always)(args):
            return False
        if working_dir is not None and not _confined(seg[1:], working_dir):
            return False
    return True


def _confined(args: list[Token], working_dir: Path) -> bool:
    """Whether every argument, and every file a glob argument expands to, stays inside
    `working_dir` once symlinks are resolved (`cat *` must not read through a link that
    leads out), and no expansion turns into an option (a file named `-R`)."""
    for token in args:
        if _names_outside(token.value, working_dir):
            return False
        if not token.globs:
            continue
        matches = _glob_matches(token.value, working_dir)
        if matches is None:
            return False
        for match in matches:
            if match.name.startswith("-") or _names_outside(str(match), working_dir):
                return False
    return True


_GLOB_LIMIT = 2000


def _glob_matches(word: str, working_dir: Path) -> list[Path] | None:
    """What bash could expand glob `word` to, as a superset (a bracket expression matches
    anything; a leading dot must be literal, as bash requires); None past `_GLOB_LIMIT`
    entries or when a folder cannot be listed."""
    path = os.path.expanduser(word)
    base = Path("/") if path.startswith("/") else working_dir
    current = [base]
    for part in Path(path).parts:
        if part == "/":
            continue
        if not any(ch in part for ch in _GLOB_CHARS):
            current = [c / part for c in current]
            continue
        pattern = "*" if "[" in part else part
        hidden = part.startswith(".")
        found: list[Path] = []
        for folder in current:
            try:
                names = os.listdir(folder)
            except NotADirectoryError:
                continue
            except FileNotFoundError:
                continue
            except OSError:
                return None
            for name in names:
                if (hidden or not name.startswith(".")) and fnmatch.fnmatchcase(name, pattern):
                    found.append(folder / name)
            if len(found) > _GLOB_LIMIT:
                return None
        current = found
    return current


_HARMLESS_PATHS = frozenset({"/dev/null", "/dev/stdin", "-"})
_GLOB_CHARS = frozenset("*?[")


def _names_outside(arg: str, working_dir: Path) -> bool:
    """Whether `arg` (or the value of `--opt=value`) names a path outside `working_dir`.
    Relative paths are taken from `working_dir`: Bash refuses a `cd` that leaves it, so
    a relative path from a later `cd` can only end up further inside."""
    candidates = [arg]
    if arg.startswith("-"):
        candidates.append(arg.split("=", 1)[1] if "=" in arg else arg[2:])  # -fVALUE
    root = working_dir.resolve()
    for value in candidates:
        if not value or value in _HARMLESS_PATHS:
            continue
        if value.startswith("~") and not (value == "~" or value.startswith("~/")):
            return True  # ~user, ~- ($OLDPWD), ~+: somewhere else
        if any(part.startswith(".") and _GLOB_CHARS & set(part) for part in Path(value).parts):
            return True  # `.?` matches `..` in older bash
        path = Path(os.path.expanduser(value))
        if not path.is_absolute():
            path = working_dir / path
        try:
            resolved = path.resolve()  # a symlink inside the workspace may lead outside
        except (OSError, RuntimeError):
            return True
        if resolved != root and root not in resolved.parents:
            return True
    return False


# ---------------------------------------------------------------- .git

_DOT_GIT = re.compile(r"(?<![A-Za-z0-9_])\.git(?![A-Za-z0-9_.\-])", re.IGNORECASE)
"""`.git` as a whole path component (`.git`, `.GIT/config`, `--output=.git/x`), not
`.gitignore`, `.github/` or a repository URL's `repo.git`."""
_DOT_GIT_ANYWHERE = re.compile(r"\.git(?![A-Za-z0-9_.\-])", re.IGNORECASE)
_GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l",
                               "--list", "get", "list", "--get-color", "--get-colorbool"})  # fmt: skip
_GIT_CONFIG_WRITES = frozenset({"--unset", "--unset-all", "--add", "--replace-all", "-e",
                                "--edit", "--rename-section", "--remove-section", "set",
                                "unset", "edit", "rename-section", "remove-section"})  # fmt: skip
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                                "--config-env", "--exec-path"})  # fmt: skip


def names_git_dir(cmd: str, _depth: int = 0) -> bool:
    """Whether `cmd` may write inside a `.git` folder by what it says: a word (after
    quote removal and `$'…'` decoding, in any case), a redirection target or a
    substitution naming `.git`, a glob that can match `.git` (`.g?t`, `.[a-z]*`), or
    `git config` setting a key other than a few harmless ones (config entries run
    programs: `core.fsmonitor`, `core.hooksPath`, `diff.external`, `alias.*`). Text that cannot be analysed counts as naming it
    when its raw form does."""
    if _depth > 5 or _DOT_GIT.search(cmd):  # also here-document bodies fed to a shell
        return True
    try:
        lexed = lex(cmd)
    except ShellSyntaxError:
        return bool(_DOT_GIT_ANYWHERE.search(cmd))
    if "dotglob" in cmd and any(t.globs for t in lexed.tokens):
        return True
    for token in lexed.tokens:
        if token.kind != "word":
            continue
        value = token.value
        if _DOT_GIT.search(value) or (value[:1] == "-" and _DOT_GIT.match(value[2:])):
            return True  # `-o.git/config`: a short option's attached value
        if token.globs and _glob_may_name_git(token.value):
            return True
    for seg in segments(lexed):
        program, args = _program_of(_words(seg))
        if program == "git" and _git_config_writes(args):
            return True
        if program in _SHELLS and "-c" in args:
            index = args.index("-c")
            if index + 1 < len(args) and names_git_dir(args[index + 1], _depth + 1):
                return True
        if program == "eval" and names_git_dir(" ".join(args), _depth + 1):
            return True
    return any(names_git_dir(body, _depth + 1) for body in lexed.substitutions)


def _glob_may_name_git(word: str) -> bool:
    for part in word.split("/"):
        if part.startswith(".") and _GLOB_CHARS & set(part):
            pattern = re.sub(r"\[\^", "[!", part.lower())
            if fnmatch.fnmatchcase(".git", pattern) or "[:" in part:
                return True
    return False


_GIT_CONFIG_HARMLESS = re.compile(
    r"(user|color|advice|init|pull|push|fetch|merge|rebase|log|format|status|branch)\.[^.]+"
    r"|core\.(autocrlf|eol|filemode|ignorecase|quotepath|safecrlf|whitespace)",
    re.IGNORECASE,
)
"""`git config` keys whose values never name a program or a file to include (`user.email`,
`pull.rebase`, `core.autocrlf`); setting any other key counts as a write into `.git/`.
`section.subsection.key` forms (`branch.main.remote`, `merge.x.driver`) are not in it."""
_GIT_CONFIG_VALUE_OPTIONS = frozenset({"-f", "--file", "--blob", "--type", "--default",
                                       "--comment", "--value"})  # fmt: skip


def _git_config_writes(args: list[str]) -> bool:
    """Whether `git …` (its arguments) runs `git config` to set, add, unset or edit anything
    but a harmless key."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _GIT_VALUE_OPTIONS else 1
    if i >= len(args) or args[i] != "config":
        return False
    rest = args[i + 1 :]
    operands: list[str] = []
    j = 0
    while j < len(rest):
        if rest[j] in _GIT_CONFIG_VALUE_OPTIONS:
            j += 2
            continue
        if not rest[j].startswith("-"):
            operands.append(rest[j])
        j += 1
    editing = any(
        a in _GIT_CONFIG_WRITES or _is_long_option(a, tuple(_GIT_CONFIG_WRITES)) for a in rest
    )
    if not editing:
        if any(a in _GIT_CONFIG_READS or a.startswith("--get") for a in rest):
            return False
        if len(operands) <= 1 and (not operands or operands[0] not in _GIT_CONFIG_WRITES):
            return False  # `git config NAME` reads it
    if operands and operands[0] in _GIT_CONFIG_WRITES | _GIT_CONFIG_READS:
        operands = operands[1:]  # git 2.46 subcommands: `git config set NAME VALUE`
    if any(a in ("-e", "--edit", "edit") for a in rest) or not operands:
        return True
    return not _GIT_CONFIG_HARMLESS.fullmatch(operands[0])


# ---------------------------------------------------------------- rules

SUBCOMMAND_PROGRAMS = frozenset(
    """
    git npm pnpm yarn bun cargo go pip pip3 uv poetry pdm hatch make docker docker-compose
    podman kubectl helm terraform gh dotnet mvn gradle ./gradlew rustup brew apt apt-get
    conda mamba npx bunx deno composer bundle rake mix swift flutter dart pytest-watch
    cmake ninja just task nx turbo lerna systemctl
    """.split()
)
_RUN_SUBCOMMANDS = frozenset({"run", "exec", "x", "dlx"})
_PYTHONS = re.compile(r"^python(3(\.\d+)?)?$")


def _simple_words(cmd: str) -> list[str] | None:
    """The words of `cmd` if it is one simple command (no operators, redirections,
    substitutions or here-docs), else None."""
    try:
        lexed = lex(cmd.strip())
    except ShellSyntaxError:
        return None
    if lexed.has_substitution or lexed.has_redirection or lexed.has_heredoc:
        return None
    if any(t.kind == "op" for t in lexed.tokens):
        return None
    words = [t.value for t in lexed.tokens]
    return words or None


def _normalise(cmd: str) -> str:
    """Runs of blanks folded; line breaks kept (bash runs `a\\nb` as two commands)."""
    lines = (" ".join(line.split()) for line in cmd.strip().splitlines())
    return "\n".join(line for line in lines if line)


def rule_for(cmd: str) -> str:
    """The rule an "allow always" answer stores for `cmd`.

    `Bash(<program> <subcommand>:*)` for a single simple command of a tool with
    subcommands (`git commit -m x` → `Bash(git commit:*)`, `npm run test` →
    `Bash(npm run test:*)`, `python -m pytest -q` → `Bash(python -m pytest:*)`);
    otherwise the exact command, `Bash(<command>)`.
    """
    exact = f"Bash({_normalise(cmd)})"
    words = _simple_words(cmd)
    if not words or _ASSIGNMENT.match(words[0]):
        return exact
    program = words[0]
    prefix: list[str] | None = None
    if _PYTHONS.match(program) and len(words) >= 3 and words[1] == "-m":
        prefix = words[:3]
    elif program in SUBCOMMAND_PROGRAMS and len(words) >= 2 and not words[1].startswith("-"):
        prefix = words[:2]
        if words[1] in _RUN_SUBCOMMANDS and len(words) >= 3 and not words[2].startswith("-"):
            prefix = words[:3]
    if not prefix or any(not w or re.search(r"[\s:()*$`'\"\\]", w) for w in prefix):
        return exact
    return f"Bash({' '.join(prefix)}:*)"


def rule_matches(rule: str, cmd: str) -> bool:
    """Whether stored `rule` covers `cmd`.

    `Bash(p:*)` covers a single simple command whose words start with the words of `p`
    (so `Bash(git commit:*)` never covers `git commit -m x && rm -rf /`);
    `Bash(c)` covers exactly `c`, whitespace-normalised.
    """
    match = re.fullmatch(r"Bash\((.*)\)", rule.strip(), re.DOTALL)
    if not match:
        return False
    body = match.group(1).strip()
    if body.endswith(":*"):
        prefix_words = body[:-2].split()
        words = _simple_words(cmd)
        return (
            bool(prefix_words) and words is not None and words[: len(prefix_words)] == prefix_words
        )
    return bool(body) and _normalise(body) == _normalise(cmd)


# ---------------------------------------------------------------- network

NETWORK_PROGRAMS = frozenset(
    """
    curl wget nc ncat netcat telnet ssh scp sftp ftp rsync socat aria2c lynx w3m links
    httpie http https xh axel
    """.split()
)
_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "nice", "timeout", "command", "exec",
                       "builtin", "stdbuf", "xargs", "watch", "strace", "doas", "ionice"})  # fmt: skip
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_NETWORK_FALLBACK = re.compile(
    r"(?:^|[\s;&|(`])(?:\S*/)?(" + "|".join(sorted(NETWORK_PROGRAMS)) + r")(?=\s|$|[;&|)`])"
)


_WRAPPER_VALUE_OPTIONS = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"},
    "doas": {"-u", "-C"},
    "xargs": {"-I", "-i", "-n", "-P", "-L", "-l", "-s", "-d", "-E", "-e", "-a"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "nice": {"-n"},
    "ionice": {"-c", "-n", "-p"},
    "stdbuf": {"-i", "-o", "-e"},
    "watch": {"-n", "-d"},
    "strace": {"-e", "-o", "-p", "-s", "-u"},
    "env": {"-u", "-C", "-S"},
}


def _program_of(words: list[str]) -> tuple[str | None, list[str]]:
    """The program a simple command runs (through env/sudo/xargs/... wrappers) and its args."""
    i = 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word):
            i += 1
            continue
        name = os.path.basename(word)
        if name == "command" and any(w in ("-v", "-V") for w in words[i + 1 : i + 2]):
            return None, []  # `command -v curl` only looks the program up
        if name in _WRAPPERS:
            value_options = _WRAPPER_VALUE_OPTIONS.get(name, set())
            i += 1
            while i < len(words):
                current = words[i]
                if current in value_options:
                    i += 2
                elif current.startswith("-") or _ASSIGNMENT.match(current):
                    i += 1
                elif name == "timeout" and re.match(r"^\d", current):
                    i += 1  # the duration
                else:
                    break
            continue
        return name, words[i + 1 :]
    return None, []


def network_program(cmd: str, _depth: int = 0) -> str | None:
    """The network fetcher `cmd` would run (curl, wget, ssh, ...), if any."""
    if _depth > 5:
        return None
    try:
        lexed = lex(cmd)
    except ShellSyntaxError:
        found = _NETWORK_FALLBACK.search(cmd)
        return found.group(1) if found else None
    for seg in segments(lexed):
        program, args = _program_of(_words(seg))
        if program is None:
            continue
        if program in NETWORK_PROGRAMS:
            return program
        if program in _SHELLS and "-c" in args:
            index = args.index("-c")
            if index + 1 < len(args) and (inner := network_program(args[index + 1], _depth + 1)):
                return inner
        if program == "eval" and (inner := network_program(" ".join(args), _depth + 1)):
            return inner
    for body in lexed.substitutions:
        if inner := network_program(body, _depth + 1):
            return inner
    return None

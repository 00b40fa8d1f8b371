"""Static analysis of Bash commands: the safe read-only list and permission rules.

`is_safe_readonly_command` decides whether a command may run without asking (and
concurrently with other read-only calls); `rule_for` proposes the rule an "allow
always" answer stores; `rule_matches` checks a command against a stored rule. All
three share one small shell lexer that knows quoting, escapes, comments, operators,
redirections, here-docs and substitutions, so that a quoted `|` or `;` is never
mistaken for an operator and a real one is never missed.

This is a policy aid, not a sandbox: anything the lexer cannot analyse is treated as
unsafe (it needs a permission prompt).

The lexer is `shell_lexer`, the rules `bash_rules`, what a command reaches beyond its
words (`.git`, the network) `bash_targets`; this module is the one to import.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable
from pathlib import Path

from sema_rpc.core.policy.bash_rules import SUBCOMMAND_PROGRAMS, rule_for, rule_matches
from sema_rpc.core.policy.bash_targets import NETWORK_PROGRAMS, names_git_dir, network_program
from sema_rpc.core.policy.shell_lexer import (
    ASSIGNMENT,
    GLOB_CHARS,
    ShellSyntaxError,
    Token,
    is_long_option,
    lex,
    segment_words,
    segments,
    short_flags,
)

__all__ = [
    "NETWORK_PROGRAMS",
    "SUBCOMMAND_PROGRAMS",
    "ShellSyntaxError",
    "is_safe_readonly_command",
    "lex",
    "names_git_dir",
    "network_program",
    "rule_for",
    "rule_matches",
    "segments",
]


def _always(_args: list[str]) -> bool:
    return True


def _refuse(short: str = "", *long_options: str) -> Callable[[list[str]], bool]:
    """A check refusing the short option letters (bundled or not) and the long options."""

    def check(args: list[str]) -> bool:
        return not any(
            any(ch in short for ch in short_flags(a)) or is_long_option(a, long_options)
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
    if any(is_long_option(a, ("--output",)) or a.startswith("--output") for a in rest):
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
        program, *args = segment_words(seg)
        if any(t.expands for t in seg) or ASSIGNMENT.match(program):
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
        if not any(ch in part for ch in GLOB_CHARS):
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
        if any(part.startswith(".") and GLOB_CHARS & set(part) for part in Path(value).parts):
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

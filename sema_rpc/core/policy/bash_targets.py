"""What a Bash command reaches beyond its words: the `.git` folder (`names_git_dir`) and
the network (`network_program`), seen through wrappers (`sudo`, `env`, `xargs` ...),
`sh -c`, `eval` and substitutions.
"""

from __future__ import annotations

import fnmatch
import os
import re

from sema_rpc.core.policy.shell_lexer import (
    ASSIGNMENT,
    GLOB_CHARS,
    ShellSyntaxError,
    is_long_option,
    lex,
    segment_words,
    segments,
)

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
        program, args = program_of(segment_words(seg))
        if program == "git" and _git_config_writes(args):
            return True
        if program in SHELLS and "-c" in args:
            index = args.index("-c")
            if index + 1 < len(args) and names_git_dir(args[index + 1], _depth + 1):
                return True
        if program == "eval" and names_git_dir(" ".join(args), _depth + 1):
            return True
    return any(names_git_dir(body, _depth + 1) for body in lexed.substitutions)


def _glob_may_name_git(word: str) -> bool:
    for part in word.split("/"):
        if part.startswith(".") and GLOB_CHARS & set(part):
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
        a in _GIT_CONFIG_WRITES or is_long_option(a, tuple(_GIT_CONFIG_WRITES)) for a in rest
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


# ---------------------------------------------------------------- network

NETWORK_PROGRAMS = frozenset(
    """
    curl wget nc ncat netcat telnet ssh scp sftp ftp rsync socat aria2c lynx w3m links
    httpie http https xh axel
    """.split()
)
_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "nice", "timeout", "command", "exec",
                       "builtin", "stdbuf", "xargs", "watch", "strace", "doas", "ionice"})  # fmt: skip
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
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


def program_of(words: list[str]) -> tuple[str | None, list[str]]:
    """The program a simple command runs (through env/sudo/xargs/... wrappers) and its args."""
    i = 0
    while i < len(words):
        word = words[i]
        if ASSIGNMENT.match(word):
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
                elif current.startswith("-") or ASSIGNMENT.match(current):
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
        program, args = program_of(segment_words(seg))
        if program is None:
            continue
        if program in NETWORK_PROGRAMS:
            return program
        if program in SHELLS and "-c" in args:
            index = args.index("-c")
            if index + 1 < len(args) and (inner := network_program(args[index + 1], _depth + 1)):
                return inner
        if program == "eval" and (inner := network_program(" ".join(args), _depth + 1)):
            return inner
    for body in lexed.substitutions:
        if inner := network_program(body, _depth + 1):
            return inner
    return None

"""A small shell lexer for the static analysis of Bash commands (`bash_safety`): it knows
quoting, escapes, comments, operators, redirections, here-docs and substitutions, so that
a quoted `|` or `;` is never mistaken for an operator and a real one is never missed.
Anything it cannot analyse raises ShellSyntaxError (the caller treats it as unsafe).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class ShellSyntaxError(ValueError):
    pass


_SEPARATORS = {";", "&&", "||", "|", "|&", "&", "\n", ";;", ";&", ";;&", "(", ")"}
_REDIRECTS = {"<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<", "<<-", "<<<"}
_OPERATORS = sorted(_SEPARATORS | _REDIRECTS, key=len, reverse=True)
_OPERATOR_CHARS = set(";&|<>()\n")
GLOB_CHARS = frozenset("*?[")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")


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


def segment_words(segment: list[Token]) -> list[str]:
    return [t.value for t in segment]


def short_flags(arg: str) -> str:
    """The letters of a bundled short-option word (`-la` → `la`), else ``."""
    return arg[1:] if arg.startswith("-") and not arg.startswith("--") else ""


def is_long_option(arg: str, options: tuple[str, ...]) -> bool:
    """`arg` is one of the long `options`, also abbreviated (getopt accepts `--out=x`)."""
    name = arg.split("=", 1)[0]
    if not name.startswith("--") or len(name) < 3:
        return False
    return any(o.startswith(name) for o in options)

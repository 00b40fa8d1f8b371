"""Permission rules for Bash commands: the rule an "allow always" answer stores
(`rule_for`) and whether a command matches a stored rule (`rule_matches`).
"""

from __future__ import annotations

import re

from sema_rpc.core.policy.shell_lexer import ASSIGNMENT, ShellSyntaxError, lex

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
    if not words or ASSIGNMENT.match(words[0]):
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

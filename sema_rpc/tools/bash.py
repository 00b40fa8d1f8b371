"""Bash: run a shell command in the working directory, streaming its output."""

from __future__ import annotations

import asyncio
import codecs
import os
import signal
from collections.abc import Callable
from pathlib import Path

from sema_rpc import sandbox
from sema_rpc.core.config import sema_root
from sema_rpc.core.policy.bash_safety import (
    ShellSyntaxError,
    is_safe_readonly_command,
    lex,
    names_git_dir,
    network_program,
    rule_for,
    rule_matches,
    segments,
)
from sema_rpc.core.policy.paths import is_inside
from sema_rpc.core.processes import GuardedProcess, spawn
from sema_rpc.core.scopes import move_on_after, shielded
from sema_rpc.core.secrets import SECRET_ENV

from .base import FileEffect, PermissionAsk, Tool, ToolContext, ToolOutput
from .input_plain import BashInput
from .limits import DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS

MAX_TIMEOUT_ENV = "SEMA_BASH_MAX_TIMEOUT_MS"
MAX_OUTPUT_CHARS = 30_000
STREAM_LIMIT_CHARS = 200_000
"""Past this much streamed output, updates stop (the result still gets head and tail)."""
KILL_GRACE_S = 1.0
"""Between SIGTERM and SIGKILL of the process group."""
PIPE_GRACE_S = 0.5
"""After the shell exits, how long background children may keep the output pipe open."""
SHELL = "/bin/bash"


def max_timeout_ms() -> int:
    try:
        value = int(os.environ.get(MAX_TIMEOUT_ENV, ""))
    except ValueError:
        return MAX_TIMEOUT_MS
    return value if value > 0 else MAX_TIMEOUT_MS


def effective_timeout_ms(requested: int | None) -> int:
    limit = max_timeout_ms()
    return min(requested or DEFAULT_TIMEOUT_MS, limit)


class BashTool(Tool):
    name = "Bash"
    description = (
        "Runs a command with /bin/bash in the working directory and returns its combined "
        "stdout and stderr.\n"
        "- Each call starts a fresh shell in the working directory: `cd` and variables do not "
        "persist between calls. `cd` outside the working directory is refused.\n"
        f"- Timeout: default {DEFAULT_TIMEOUT_MS // 1000} s, at most {MAX_TIMEOUT_MS // 1000} s "
        "(`timeout` in ms); on timeout the whole process tree is killed. Nothing is interactive "
        "(stdin is empty): pass flags like `--yes`, avoid pagers and editors.\n"
        f"- Output over {MAX_OUTPUT_CHARS // 1000}k characters is cut in the middle. A non-zero "
        "exit status is reported as `Exit code: N`.\n"
        "- Network fetchers (curl, wget, nc, ssh, scp, ...) are refused.\n"
        "- Commands run in an OS sandbox when the session has one: writes only inside the "
        "working directory (never `.git/` or `.sema/`) and $TMPDIR, no network. When the "
        "result says the sandbox refused something the task needs, rerun the same command "
        "with `outside_sandbox: true`: the user is asked.\n"
        "- Prefer Read, Glob, Grep, Edit and Write over cat, find, grep, sed and echo > file. "
        "Quote paths containing spaces. Chain dependent commands with `&&`."
    )
    Input = BashInput

    def is_read_only(self, args: BashInput) -> bool:
        return is_safe_readonly_command(args.command)

    def changes_files(self, args: BashInput, ctx: ToolContext) -> FileEffect | None:
        if is_safe_readonly_command(args.command, ctx.working_dir):
            return None
        return FileEffect(workspace=True, mentions=args.command)

    def title(self, args: BashInput) -> str:
        text = args.description or args.command.strip().split("\n", 1)[0]
        return text if len(text) <= 100 else text[:99] + "…"

    async def validate_input(self, args: BashInput, ctx: ToolContext) -> str | None:
        if not args.command.strip():
            return "command must not be empty."
        if program := network_program(args.command):
            return (
                f"`{program}` is not allowed: network access from Bash is refused. Work with "
                "local files only."
            )
        return _check_cd(args.command, ctx.working_dir)

    def permission(self, args: BashInput, ctx: ToolContext) -> PermissionAsk | None:
        box = ctx.services.sandbox
        if args.outside_sandbox and box.active:
            return _outside_sandbox_ask(args.command, box.mode)
        if is_safe_readonly_command(args.command, ctx.working_dir):
            return None
        if box.mode == "read-only":
            return None  # confined to reading: nothing to consent to
        sandboxed = box.mode == "workspace-write"
        if names_git_dir(args.command) and not sandboxed:
            # A write inside `.git/` is asked every time, as for Write and Edit: its config
            # and hooks make later read-only git commands run programs.
            return PermissionAsk(
                title=f"Bash: {args.command} (may write inside .git/)",
                content=args.command,
                ask_every_time=True,
            )
        command = args.command
        return PermissionAsk(
            title=f"Bash: {command}",
            content=command,
            rule=rule_for(command),
            # `Bash(prefix:*)` covers the commands it names, as one simple command only.
            covered_by=lambda stored: stored.startswith("Bash(") and rule_matches(stored, command),
            sandboxed=sandboxed,
        )

    async def call(self, args: BashInput, ctx: ToolContext) -> ToolOutput:
        timeout_ms = effective_timeout_ms(args.timeout)
        output = _MiddleTruncatingBuffer(MAX_OUTPUT_CHARS)
        stream = _Streamer(ctx.emit_update)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

        def feed(text: str) -> None:
            if text:
                output.append(text)
                stream.emit(text)

        mode = command_sandbox(args, ctx)
        env = _environment()
        policy = None
        if mode != "off":
            box = ctx.services.sandbox
            env["TMPDIR"] = box.temp_dir()
            policy = sandbox.policy(
                mode,
                ctx.working_dir,
                env["TMPDIR"],
                network=box.network,
                hidden=[sema_root()],
                visible=[sema_root() / "skills"],
            )
        if (runner := ctx.services.command_runner) is not None:  # e.g. the editor's terminal
            # Someone else starts the process: the sandbox goes with it as a wrapper that
            # confines itself before it execs the shell (fails closed, status 126).
            changes = environment_changes()
            if policy is not None:
                changes["TMPDIR"] = env["TMPDIR"]
            argv = sandbox.wrap_argv(policy, [SHELL, "-c", args.command])
            return await runner.run(argv, changes, timeout_ms, ctx)
        try:
            # Its own session and group, under the process supervisor (ended with the
            # server however the server ends, see sema_rpc/core/processes.py), confined by
            # `policy` in the child right before exec (failing closed when it cannot be).
            proc = await spawn(
                [SHELL, "-c", args.command],
                cwd=ctx.working_dir,
                env=env,
                sandbox_policy=policy,
            )
        except OSError as exc:
            message = f"Could not start {SHELL} in {ctx.working_dir}: {exc}"
            return ToolOutput(content=message, summary="Could not start", is_error=True)
        kill_group = True  # unless the command finished cleanly (cancellation included)
        lingering = False
        try:
            with move_on_after(timeout_ms / 1000) as deadline:

                async def pump() -> None:
                    async for chunk in proc.stdout:
                        feed(decoder.decode(chunk))

                pumping = asyncio.ensure_future(pump())
                try:
                    await proc.wait()
                    await asyncio.wait({pumping}, timeout=PIPE_GRACE_S)
                    # Not at end of file: the shell is gone but background children
                    # still hold the pipe.
                    lingering = not pumping.done()
                finally:
                    pumping.cancel()
                    await shielded(asyncio.wait({pumping}))
                if not pumping.cancelled():
                    pumping.result()  # the pump's own error, if it had one
            timed_out = deadline.cancelled_caught
            kill_group = timed_out or lingering
        finally:

            async def end() -> None:
                if kill_group:
                    await _terminate_group(proc)
                await _close(proc)

            await shielded(end())
        feed(decoder.decode(b"", final=True))

        text = output.text().rstrip("\n")
        if timed_out:
            content = f"Command timed out after {timeout_ms / 1000:g} s and was killed."
            if text:
                content += f" Output so far:\n{text}"
            return ToolOutput(content=content, summary="Timed out", is_error=True)
        code = proc.returncode if proc.returncode is not None else -1
        parts = [text] if text else []
        if lingering:
            parts.append("[background processes still writing to the output were killed]")
        if code < 0:
            parts.append(f"Exit code: {128 - code} (killed by signal {-code})")
        elif code != 0:
            parts.append(f"Exit code: {code}")
        if policy is not None and (note := denial_note(text, mode, ctx)):
            parts.append(note)
        content = "\n\n".join(parts) if parts else "(no output)"
        return ToolOutput(content=content, summary="Done" if code == 0 else f"Exit code {code}")


# ---------------------------------------------------------------- sandbox

OUTSIDE_RULE = "BashOutsideSandbox("
"""The rule an "always" answer to running outside the sandbox stores, e.g.
`BashOutsideSandbox(npm install:*)`: that command prefix only."""


def command_sandbox(args: BashInput, ctx: ToolContext) -> str:
    """The sandbox this command runs in: `read-only` when the session's is, or when the
    parser calls the command read-only (a wrong guess still cannot write or connect);
    otherwise the session's mode; `off` outside it (consented) or without one."""
    box = ctx.services.sandbox
    if not box.active or args.outside_sandbox:
        return "off"
    if box.mode == "read-only" or is_safe_readonly_command(args.command, ctx.working_dir):
        return "read-only"
    return box.mode


def _outside_sandbox_ask(command: str, mode: str) -> PermissionAsk:
    rule = OUTSIDE_RULE + rule_for(command)[len("Bash(") :]

    def covered(stored: str) -> bool:
        return stored.startswith(OUTSIDE_RULE) and rule_matches(
            "Bash(" + stored[len(OUTSIDE_RULE) :], command
        )

    return PermissionAsk(
        title=f"Run outside the sandbox ({mode} lifted): {command}",
        content=(
            f"{command}\n\nThis command runs without the OS sandbox: it may write anywhere "
            "you can (including .git/) and use the network."
        ),
        rule=rule,
        covered_by=covered,
        leaves_sandbox=True,
    )


DENIAL_MARKERS = (
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
    "Invalid cross-device link",
)
"""How a refusal by the sandbox reads in a command's output (EACCES, EPERM, EXDEV): the
kernel does not tell the command who refused, so the note says what it knows.
(EROFS: `.git`, `.sema` are mounted read-only for the command.)"""


def denial_note(text: str, mode: str, ctx: ToolContext) -> str | None:
    """For a failed sandboxed command whose output shows a refusal: which lines, what the
    sandbox allows, and how to run it outside (the user is asked)."""
    lines = [line.strip() for line in text.splitlines() if any(m in line for m in DENIAL_MARKERS)]
    if not lines:
        return None
    shown = "\n".join(f"  {line[:300]}" for line in lines[:5])
    more = f"\n  ... and {len(lines) - 5} more" if len(lines) > 5 else ""
    if mode == "read-only":
        allowed = "no writes except $TMPDIR"
    else:
        allowed = (
            f"writes only inside {ctx.working_dir} (not its .git/ or .sema/, and no new "
            "entries at its top level when those exist) and $TMPDIR"
        )
    network = "TCP allowed" if ctx.services.sandbox.network else "no network connections"
    return (
        f"[sandbox] This command ran in the {mode} OS sandbox ({allowed}; {network}; the "
        f"user's {sema_root()} is unreadable). These refusals are likely the sandbox's:\n"
        f"{shown}{more}\nIf the task needs that, rerun the same command with "
        "`outside_sandbox: true` (the user is asked), or do the write with Write/Edit."
    )


# ---------------------------------------------------------------- validation


def _check_cd(command: str, working_dir: Path) -> str | None:
    """Refuse `cd` (or pushd) to anywhere outside the working directory."""
    try:
        lexed = lex(command)
    except ShellSyntaxError:
        return None  # bash will report the syntax error itself
    root = working_dir.resolve()
    current = root
    for seg in segments(lexed):
        words = [t.value for t in seg]
        if words[0] not in ("cd", "pushd"):
            continue
        targets = [t for t in seg[1:] if not (t.value.startswith("-") and len(t.value) > 1)]
        if not targets:
            return "`cd` without a directory goes to the home directory, outside the working directory; refused."
        target = targets[0]
        value = target.value
        home_of_other_user = value.startswith("~") and not (value == "~" or value.startswith("~/"))
        if target.expands or value == "-" or home_of_other_user:
            return f"`cd {target.value}`: cannot verify the target stays inside the working directory; use a literal path."
        candidate = Path(os.path.expanduser(target.value))
        if not candidate.is_absolute():
            candidate = current / candidate
        candidate = candidate.resolve()
        if not is_inside(candidate, root):
            return f"`cd {target.value}` leaves the working directory ({root}); refused."
        current = candidate
    return None


# ---------------------------------------------------------------- process


SERVER_SECRETS = frozenset(SECRET_ENV)
"""The model keys this server reads: the agent's commands never see them (a `printenv`
would put them in the model's context and the history)."""


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SERVER_SECRETS and k != "OLDPWD"}
    # A folder the model wrote (HEAD, objects/, refs/, config) is a bare repository to git,
    # whose config (`diff.external`, `core.fsmonitor`) would make the read-only `git diff`
    # run a program: git only uses a bare repository it is pointed at explicitly.
    try:
        count = max(0, int(env.get("GIT_CONFIG_COUNT", "0")))
    except ValueError:
        count = 0
    env[f"GIT_CONFIG_KEY_{count}"] = "safe.bareRepository"
    env[f"GIT_CONFIG_VALUE_{count}"] = "explicit"
    env["GIT_CONFIG_COUNT"] = str(count + 1)
    env.update(
        PAGER="cat",
        GIT_PAGER="cat",
        GIT_EDITOR="true",
        GIT_TERMINAL_PROMPT="0",
    )
    return env


def environment_changes() -> dict[str, str]:
    """What `_environment()` adds or changes, for a command run by someone else (whose
    environment is its own: this server's keys are not in it)."""
    return {k: v for k, v in _environment().items() if os.environ.get(k) != v}


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is left in group `pgid`."""
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    with os.scandir(proc_dir) as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(os.path.join(entry.path, "stat"), "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
                return True
    return False


async def _terminate_group(proc: GuardedProcess) -> None:
    """SIGTERM the command's whole process group, SIGKILL what is left after a grace period."""
    pgid = proc.pid  # start_new_session: the shell leads its own group
    if not _group_alive(pgid):
        return
    _signal_group(pgid, signal.SIGTERM)
    try:
        for _ in range(round(KILL_GRACE_S / 0.05)):
            if not _group_alive(pgid):
                break
            await asyncio.sleep(0.05)
    finally:
        # Also reached when the wait is cancelled: nothing of the group is left behind.
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)


async def _close(proc: GuardedProcess) -> None:
    await shielded(proc.aclose())  # closes the pipes and reaps the shell


# ---------------------------------------------------------------- output


class _MiddleTruncatingBuffer:
    """Keeps the first and last `limit / 2` characters of a stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.head_budget = limit // 2
        self.tail_budget = limit - self.head_budget
        self.limit = limit
        self.head = ""
        self.tail: list[str] = []
        self.tail_len = 0
        self.total = 0

    def append(self, text: str) -> None:
        self.total += len(text)
        if len(self.head) < self.head_budget:
            room = self.head_budget - len(self.head)
            self.head += text[:room]
            text = text[room:]
        if text:
            self.tail.append(text)
            self.tail_len += len(text)
            if self.tail_len > 2 * self.tail_budget:
                joined = "".join(self.tail)[-self.tail_budget :]
                self.tail, self.tail_len = [joined], len(joined)

    def text(self) -> str:
        tail = "".join(self.tail)
        if self.total <= self.limit:
            return self.head + tail
        tail = tail[-self.tail_budget :]
        dropped = self.total - len(self.head) - len(tail)
        return f"{self.head}\n\n... [{dropped} characters truncated] ...\n\n{tail}"


class _Streamer:
    def __init__(self, emit: Callable[[str], None]) -> None:
        self.emit_update = emit
        self.sent = 0
        self.stopped = False

    def emit(self, text: str) -> None:
        if self.stopped:
            return
        if self.sent + len(text) > STREAM_LIMIT_CHARS:
            text = text[: STREAM_LIMIT_CHARS - self.sent] + "\n... [further output not streamed]\n"
            self.stopped = True
        self.sent += len(text)
        try:
            self.emit_update(text)
        except Exception:
            self.stopped = True

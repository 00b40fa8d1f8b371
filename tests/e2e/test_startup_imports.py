"""What the paths to a first answer import: the one-shot `sema-rpc run` and `initialize` in
both dialects. Modules a path never uses must stay off it (each one is start-up time
every run pays); these tests name them. They assert what is imported, never how fast.

A module that joins a path on purpose is fine; one of the sets below growing is not:
load it where it is used (a function-level import, a package `__getattr__`).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sema_rpc.tools.registry import AGENT_REFS, BUILTIN_REFS
from tests.support.scripted_llm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]

ONE_SHOT_NEVER = (
    # SDKs and libraries the light HTTP path and a plain answer do without
    "anthropic",
    "openai",
    "tiktoken",
    "mcp",
    "mcp_types",
    # the light path's HTTP is our own transport (asyncio streams + our HTTP/1.1 codec)
    "httpx2",
    "httpcore2",
    "h11",
    "urllib.request",
    "email",
    "truststore",
    # httpx2 and httpcore2 ask it their versions; the light path answers from their
    # dist-info (sema_rpc/providers/_httpx2_version.py)
    "importlib.metadata",
    # standard modules with a few ms of import each, for what needs none of them (random
    # ids, the platform's name, the temp folder, escaping an attribute)
    "uuid",
    "platform",
    "tempfile",
    "html",
    "datetime",
    # our own modules for other paths
    "sema_rpc.acp",
    "sema_rpc.mcp.manager",
    "sema_rpc.mcp.tool",
    "sema_rpc.providers.openai_chat",
    "sema_rpc.providers.openai_responses",
    "sema_rpc.providers.recording",
    "sema_rpc.providers.scripted",
    "sema_rpc.record.replay",
    "sema_rpc.record.view",
    "sema_rpc.schema_gen",
    "sema_rpc.tools.schemas",
    "sema_rpc.ts_gen",
    "sema_rpc.client_gen",
    "sema_rpc.spec_tables",
    # offered from their generated cards: a tool's module loads when it is first called
    "sema_rpc.tools.read",
    "sema_rpc.tools.glob",
    "sema_rpc.tools.grep",
    "sema_rpc.tools.bash",
    "sema_rpc.tools.write",
    "sema_rpc.tools.edit",
    "sema_rpc.tools.todo_write",
    "sema_rpc.tools.task",
    "sema_rpc.tools.skill",
    "sema_rpc.tools.ask_user_question",
    "sema_rpc.tools.exit_plan_mode",
    "sema_rpc.core.policy.bash_safety",
    "sema_rpc.core.policy.bash_targets",
    "sema_rpc.core.policy.shell_lexer",
    # loaded where a turn that calls no tool never goes
    "sema_rpc.engine.prompt.references",
    "sema_rpc.core.project.custom_commands",
    "sema_rpc.engine.session.subagents",
    "sema_rpc.engine.store.listing",
    "sema_rpc.mcp.config",
)
"""Never imported by `sema-rpc run --yes --model anthropic/… PROMPT` answering in text,
with no MCP server configured (a module and its submodules)."""

INITIALIZE_NEVER = (
    "pydantic",
    "pydantic_core",
    "sema_rpc.protocol",
    "sema_rpc.protocol_wire",
    "sema_rpc.protocol_events",
    "sema_rpc.protocol_sessions",
    "sema_rpc.acp.server",
    "sema_rpc.acp.wire",
    "sema_rpc.engine",
    "sema_rpc.providers",
    "sema_rpc.tools",
    "sema_rpc.mcp",
    "httpx2",
    "httpcore2",
    "h11",
    "anyio",
    "anthropic",
    "openai",
    "tiktoken",
    "mcp",
)
"""Not imported before a plainly valid `initialize` is answered, in either dialect."""

# Runs the real command line in this interpreter and writes `sys.modules` to a file at
# its end (`os._exit`, which the CLI leaves by after an orderly end).
_DUMP_AT_EXIT = """
import json, os, sys
_exit = os._exit
def dump_and_exit(code):
    with open(os.environ["SEMA_TEST_MODULES_OUT"], "w") as f:
        json.dump(sorted(sys.modules), f)
    _exit(code)
os._exit = dump_and_exit
sys.argv = ["sema-rpc", *sys.argv[1:]]
from sema_rpc.cli import main
main()
"""


def _hits(modules: list[str], never: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in never)]


def test_the_one_shot_imports_nothing_it_does_not_use(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
) -> None:
    scripted_llm.script(Reply.text("hello there", chunks=2))
    out = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", _DUMP_AT_EXIT, "run", "--yes", "--model", "anthropic/claude-test",
         "--cwd", str(workspace), "hi"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, **server_env, "SEMA_TEST_MODULES_OUT": str(out)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert lines[-1]["result"]["stopReason"] == "end_turn"
    modules = json.loads(out.read_text())
    # the path did run: the server, the engine, the light HTTP provider
    assert {"sema_rpc.rpc.server", "sema_rpc.engine.engine", "sema_rpc.providers.http"} <= set(
        modules
    )
    assert _hits(modules, ONE_SHOT_NEVER) == []


def test_a_plain_http_one_shot_never_reads_the_ca_store(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
) -> None:
    """The model server is plain http: the CA store is never read (here SSL_CERT_FILE
    names a file that does not exist, which reading would fail on), and the answer comes."""
    scripted_llm.script(Reply.text("hello there", chunks=2))
    env = {**os.environ, **server_env, "SSL_CERT_FILE": str(tmp_path / "no-such-ca.pem")}
    proc = subprocess.run(
        [sys.executable, "-m", "sema_rpc", "run", "--yes", "--model", "anthropic/claude-test",
         "--cwd", str(workspace), "hi"],
        capture_output=True, text=True, timeout=120, cwd=REPO, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert lines[-1]["result"]["stopReason"] == "end_turn"
    text = [x["params"]["delta"] for x in lines if x.get("method") == "message:text:chunk"]
    assert "".join(text) == "hello there"


MOVED_OFF = tuple(
    m
    for m in ONE_SHOT_NEVER
    if m.startswith(("sema_rpc.tools.", "sema_rpc.core.", "sema_rpc.engine.", "sema_rpc.mcp."))
)
"""The modules a turn that calls no tool does without (tools, @references, custom commands,
subagents, the session listing, the MCP configuration): none of them on either path."""


@pytest.mark.parametrize("dialect", ["--jsonl", "--acp"], ids=["native", "acp"])
def test_initialize_and_its_end_load_none_of_the_modules_a_turn_does_without(
    server_env: dict[str, str], tmp_path: Path, dialect: str
) -> None:
    """A server spawned, answering `initialize`, then seeing its input end: everything
    it imported by its exit leaves out the modules a plain turn does without."""
    out = tmp_path / "modules.json"
    version: int | str = 1 if dialect == "--acp" else "1"
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": version}}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", _DUMP_AT_EXIT, dialect],
        input=json.dumps(request) + "\n", capture_output=True, text=True, timeout=120,
        cwd=REPO, env={**os.environ, **server_env, "SEMA_TEST_MODULES_OUT": str(out)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout.splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1
    modules = json.loads(out.read_text())
    assert "sema_rpc.rpc.connection" in modules
    assert _hits(modules, MOVED_OFF) == []
    assert _hits(modules, ("sema_rpc.engine", "sema_rpc.tools", "sema_rpc.mcp")) == []


def test_a_one_shot_offers_the_tools_without_building_their_input_models(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
) -> None:
    """The tools' input schemas the request carries come generated ahead: an answer that
    calls no tool loads no tool's module nor its `Input` (plain form or declaration), and
    the model server still received every built-in tool with its schema."""
    scripted_llm.script(Reply.text("hello there", chunks=2))
    out = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", _DUMP_AT_EXIT, "run", "--yes", "--model", "anthropic/claude-test",
         "--cwd", str(workspace), "hi"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, **server_env, "SEMA_TEST_MODULES_OUT": str(out)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    modules = json.loads(out.read_text())
    assert "sema_rpc.tools.registry" in modules  # the tools were offered
    tool_modules = [m.rsplit(":", 1)[0] for m in (*BUILTIN_REFS, *AGENT_REFS)]
    inputs = ["sema_rpc.tools.input_plain", "sema_rpc.tools.input_models"]
    assert _hits(modules, (*tool_modules, *inputs)) == []
    sent = {t["name"]: t["input_schema"] for t in scripted_llm.requests[-1].body["tools"]}
    assert {"Read", "Glob", "Grep", "Bash", "Write", "Edit", "TodoWrite"} <= set(sent)
    assert sent["Read"]["properties"]["file_path"]["type"] == "string"
    assert sent["Read"]["required"] == ["file_path"]


_OUR_DATACLASSES = (
    "json.dump(sorted(f'{m.__name__}.{c.__qualname__}' for m in list(sys.modules.values())\n"
    "            if getattr(m, '__name__', '').startswith('sema_rpc')\n"
    "            for c in list(vars(m).values()) if isinstance(c, type)\n"
    "            and c.__module__ == m.__name__ and '__dataclass_fields__' in vars(c)), f)"
)


def test_a_one_shot_creates_no_dataclass_of_ours(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
) -> None:
    """The value classes a turn loads are written out by hand (sema_rpc/plain_record.py):
    a `@dataclass` compiles its methods with `exec` at import, on every server's start."""
    scripted_llm.script(Reply.text("hello there", chunks=2))
    out = tmp_path / "dataclasses.json"
    code = _DUMP_AT_EXIT.replace("json.dump(sorted(sys.modules), f)", _OUR_DATACLASSES)
    proc = subprocess.run(
        [sys.executable, "-c", code, "run", "--yes", "--model", "anthropic/claude-test",
         "--cwd", str(workspace), "hi"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, **server_env, "SEMA_TEST_MODULES_OUT": str(out)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert lines[-1]["result"]["stopReason"] == "end_turn"
    assert json.loads(out.read_text()) == []


def test_acp_initialize_is_answered_before_the_models_load() -> None:
    """A plainly valid ACP `initialize` is answered with none of INITIALIZE_NEVER loaded;
    the server loads at the loop's next turn, gets the client's capabilities, and serves
    a message read meanwhile, in order."""
    code = (
        "import asyncio, io, json, sys\n"
        "from sema_rpc.rpc.framing import FrameWriter\n"
        "from sema_rpc.acp.front import _Front\n"
        "never = json.loads(sys.argv[1])\n"
        "heavy = lambda: sorted(m for m in sys.modules\n"
        "                       if any(m == n or m.startswith(n + '.') for n in never))\n"
        "async def main():\n"
        "    out = io.BytesIO()\n"
        "    front = _Front(FrameWriter(out, jsonl=True))\n"
        '    front.on_body(b\'{"jsonrpc":"2.0","id":1,"method":"initialize","params":\'\n'
        '                  b\'{"protocolVersion":1,"clientCapabilities":\'\n'
        '                  b\'{"fs":{"readTextFile":true,"writeTextFile":false},"terminal":true}}}\')\n'
        "    before = heavy()\n"
        "    answered = out.getvalue()\n"
        '    front.on_body(b\'{"jsonrpc":"2.0","id":2,"method":"authenticate",\'\n'
        '                  b\'"params":{"methodId":"nope"}}\')\n'
        "    await asyncio.sleep(0)\n"
        "    await asyncio.sleep(0.2)\n"
        "    caps = front.server.capabilities\n"
        "    print(json.dumps({'before': before, 'answered': answered.decode(),\n"
        "        'loaded': 'sema_rpc.acp.server' in sys.modules,\n"
        "        'caps': [caps.fs.read_text_file, caps.fs.write_text_file, caps.terminal],\n"
        "        'lines': [json.loads(x) for x in out.getvalue().splitlines()]}))\n"
        "asyncio.run(main())\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, json.dumps(INITIALIZE_NEVER)],
        capture_output=True, text=True, check=True, cwd=REPO,
    )  # fmt: skip
    seen = json.loads(run.stdout)
    assert seen["before"] == []
    first = json.loads(seen["answered"])
    assert first["id"] == 1 and first["result"]["agentInfo"]["name"] == "sema-rpc"
    assert first["result"]["protocolVersion"] == 1
    assert seen["loaded"] is True
    assert seen["caps"] == [True, False, True]
    second = seen["lines"][1]
    assert second["id"] == 2 and second["error"]["code"] == -32602


async def test_acp_initialize_of_another_shape_gets_the_models_answer(
    server_env: dict[str, str],
) -> None:
    """An `initialize` the front does not vouch for (a version that is not an integer)
    is validated by the server's models: the same -32602 as before, and the process
    keeps serving (the next, plain `initialize` is answered)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sema_rpc", "--acp", cwd=str(REPO),
        env={**os.environ, **server_env},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"one"}}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}\n'
    )
    await proc.stdin.drain()
    first = json.loads(await asyncio.wait_for(proc.stdout.readline(), 60))
    second = json.loads(await asyncio.wait_for(proc.stdout.readline(), 60))
    proc.stdin.close()
    await asyncio.wait_for(proc.wait(), 60)
    assert first["id"] == 1 and first["error"]["code"] == -32602
    assert any(e.get("loc") == ["protocolVersion"] for e in first["error"]["data"])
    assert second["id"] == 2 and second["result"]["agentInfo"]["name"] == "sema-rpc"


BEFORE_THE_LOOP_NEVER = (
    *INITIALIZE_NEVER,
    "asyncio",
    "logging",
    "argparse",
    "concurrent",
    "ssl",
    "sema_rpc.rpc.connection",
    "sema_rpc.rpc.server",
    "sema_rpc.acp.front",
    "sema_rpc.record",
)
"""Not imported when a stdio server writes its answer to a plainly valid first
`initialize`: it is answered before the event loop (cli.py, frames.read_first)."""

# Runs the real command line and writes `sys.modules` to a file at the first write to
# the protocol stream (the stream `_protect_stdout` keeps for it).
_DUMP_AT_FIRST_WRITE = """
import io, json, os, sys
import sema_rpc.cli as cli
protect = cli._protect_stdout
class Tap(io.FileIO):
    seen = False
    def write(self, data):
        if not Tap.seen:
            Tap.seen = True
            with open(os.environ["SEMA_TEST_MODULES_OUT"], "w") as f:
                json.dump(sorted(sys.modules), f)
        return super().write(data)
def tapped():
    Tap.stream = protect()  # kept open: the tap writes to its descriptor
    return Tap(Tap.stream.fileno(), "wb", closefd=False)
cli._protect_stdout = tapped
sys.argv = ["sema-rpc", *sys.argv[1:]]
cli.main()
"""


@pytest.mark.parametrize("dialect", ["", "--jsonl", "--acp"], ids=["native", "jsonl", "acp"])
def test_a_first_initialize_is_answered_before_the_event_loop(
    server_env: dict[str, str], tmp_path: Path, dialect: str
) -> None:
    """What is imported when the answer is written: no asyncio, no connection, no
    server; and the answer is the server's (the same result as a second `initialize`,
    which the server answers once its loop runs)."""
    out = tmp_path / "modules.json"
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": 1}})  # fmt: skip
    again = body.replace('"id": 1', '"id": 2')
    if dialect:
        data = body + "\n" + again + "\n"
    else:
        data = "".join(f"Content-Length: {len(b)}\r\n\r\n{b}" for b in (body, again))
    proc = subprocess.run(
        [sys.executable, "-c", _DUMP_AT_FIRST_WRITE, *([dialect] if dialect else [])],
        input=data.encode(), capture_output=True, timeout=120, cwd=REPO,
        env={**os.environ, **server_env, "SEMA_TEST_MODULES_OUT": str(out)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    if dialect:
        first, second = (json.loads(x) for x in proc.stdout.splitlines())
    else:
        heads = proc.stdout.split(b"Content-Length: ")[1:]
        first, second = (json.loads(h.partition(b"\r\n\r\n")[2]) for h in heads)
    assert first["id"] == 1 and first["result"]["protocolVersion"] == 1
    assert second["id"] == 2 and second["result"] == first["result"]
    modules = json.loads(out.read_text())
    assert "sema_rpc.rpc.frames" in modules
    # pydantic's plugin loader is a stand-in module, not pydantic (cli._no_pydantic_plugins)
    modules.remove("pydantic.plugin._loader")
    assert _hits(modules, BEFORE_THE_LOOP_NEVER) == []

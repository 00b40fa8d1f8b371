"""The history's writer, reader and listing run on the plain messages: a session written,
resumed and listed imports no pydantic; a corrupt message line is still validated by the
declaration (pydantic, imported then) and skipped as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

_PROBE = """
import json, sys
from pathlib import Path
from sema_rpc.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from sema_rpc.engine.store.history_format import history_path
from sema_rpc.engine.store.history_reader import load_history
from sema_rpc.engine.store.history_writer import HistoryStore
from sema_rpc.engine.store.listing import list_sessions

def pydantic_loaded():
    return sorted(k for k in sys.modules if k.split(".")[0] in ("pydantic", "pydantic_core"))

store = HistoryStore("s1", Path(sys.argv[1]))
written = [
    Message.user_text("read a.py"),
    Message(role="assistant", content=[
        TextBlock(text="Reading."), ToolUseBlock(id="t1", name="Read", input={"file_path": "a.py"}),
    ]),
    Message(role="user", content=[ToolResultBlock(tool_use_id="t1", content="print(1)")]),
    Message(role="assistant", content=[TextBlock(text="It prints 1.")]),
]
for i, m in enumerate(written):
    m.id = f"m_{i:012x}"
    store.append_message(m)
store.close()
loaded = load_history("s1")
listed = list_sessions()
out = {"same": loaded.messages == written, "skipped": loaded.skipped,
       "titles": [s.title for s in listed], "clean": pydantic_loaded()}
with open(history_path("s1"), "a") as f:
    f.write(json.dumps({"t": "message", "n": 5, "role": "robot", "content": []}) + "\\n")
    f.write(json.dumps({"t": "message", "n": 6, "role": "user",
                        "content": [{"type": "video"}]}) + "\\n")
again = load_history("s1")
out.update(after_skipped=again.skipped, after_same=again.messages == written,
           after_loaded="pydantic" in sys.modules)
print(json.dumps(out))
"""


def test_a_session_is_written_resumed_and_listed_without_pydantic(tmp_path: Path):
    workdir = tmp_path / "project"
    workdir.mkdir()
    env = {**os.environ, "SEMA_ROOT": str(tmp_path / "root"), "HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, str(workdir)],
        capture_output=True, text=True, timeout=120, cwd=REPO, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["same"] is True and seen["skipped"] == 0
    assert seen["titles"] == ["read a.py"]
    assert seen["clean"] == []
    # the two corrupt lines: each skipped (pydantic's ValidationError), nothing else lost
    assert seen["after_skipped"] == 2
    assert seen["after_same"] is True
    assert seen["after_loaded"] is True
    assert "skipping invalid message entry" in proc.stderr

"""A history written by an older version or cut by a kill, resumed by a client: ACP's
`session/load` replays it through the same reader the engine loads it with, so a line
nested too deep no longer fails the load, a message written before ids were stored is
replayed with the id the server answers to, and a torn last line is left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp.schema import TextContentBlock

from tests.support.acp_client import acp_agent
from tests.support.scripted_llm import Reply, ScriptedLLM

pytestmark = pytest.mark.asyncio

SID = "older-session"


def write_history(server_env: dict[str, str], workspace: Path) -> None:
    entries = [
        {"t": "meta", "v": 1, "n": 0, "at": 1.0, "sessionId": SID, "workingDir": str(workspace)},
        # written before ids were stored: no "id"
        {"t": "message", "n": 1, "at": 2.0, "role": "user",
         "content": [{"type": "text", "text": "What was this?"}]},
        {"t": "message", "n": 2, "at": 3.0, "role": "assistant",
         "content": [{"type": "text", "text": "An old answer."}]},
    ]  # fmt: skip
    data = b"".join(json.dumps(e).encode() + b"\n" for e in entries)
    data += b"[" * 100_000 + b"\n"  # garbage no JSON parser reads without running out of stack
    data += b'{"t":"message","n":3,"role":"user","content":[{"type":"te'  # torn by a kill
    folder = Path(server_env["SEMA_ROOT"]) / "history"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{SID}.jsonl").write_bytes(data)


async def test_load_replays_an_older_torn_history_with_ids_then_forks_from_one(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    write_history(server_env, workspace)
    async with acp_agent(server_env) as agent:
        await agent.conn.initialize(protocol_version=1)
        await agent.conn.load_session(cwd=str(workspace), session_id=SID, mcp_servers=[])
        replay = [
            u for u in agent.updates(SID) if u["sessionUpdate"] != "available_commands_update"
        ]
        assert [(u["sessionUpdate"], u["content"]["text"]) for u in replay] == [
            ("user_message_chunk", "What was this?"),
            ("agent_message_chunk", "An old answer."),
        ]
        ids = [u.get("messageId") for u in replay]
        assert all(isinstance(i, str) and i.startswith("m_") for i in ids), ids

        # the replayed id is one the server knows: a rewind to it empties the conversation
        rewound = await agent.raw_request(
            "_session/rewind", {"sessionId": SID, "messageId": ids[0], "mode": "conversation"}
        )
        assert rewound["rewound"] is True and rewound["input"] == "What was this?"

        scripted_llm.script(Reply.text("A fresh start."))
        answer = await agent.conn.prompt(
            session_id=SID, prompt=[TextContentBlock(type="text", text="Again?")]
        )
        assert answer.stop_reason == "end_turn"
        sent = scripted_llm.requests[-1].body["messages"]
        assert [m["role"] for m in sent] == ["user"]
        assert "Again?" in json.dumps(sent[0]["content"])
        assert "An old answer." not in json.dumps(sent)

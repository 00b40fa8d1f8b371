"""The interleaving machine: hypothesis.stateful drives a real `sema-rpc` process (over
Content-Length, JSONL or `--acp`, drawn per example) with random sequences of prompts,
steers, stops, cancels, mode and permission-mode changes, consent answers, close, end of
input and `kill -9` + resume, at random delays, and checks after every step what a
client relies on (protocol/README.md, "A session's life"):

- every prompt is answered at most once, and exactly once unless its process was killed;
- nothing of a session follows the answer to its close (dispose);
- `seq` rises by one, with no gap, per session and process (native dialect);
- a stop sent in the same write as its prompt ends it (`interrupted` / `cancelled`);
  a `session/interrupt` answered `true` ends the one prompt that was open, and one
  answered `false` found it already ended (its end is on the wire before the answer);
- after `kill -9` (or end of input) and resume, every `message:complete` the client saw
  and every input the model was sent is in the next model request, and every `tool_use`
  there has exactly one `tool_result`;
- no tool ran whose consent was refused or never answered.

The model's replies come from a seeded generator (the scripted model server's
`fallback`): text of a few to a few hundred deltas, or a `Write` the client is asked
to consent to. `STATS` counts what ran, for the soak's report.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tests.support.raw_peer import DIALECTS, RawPeer
from tests.support.scripted_llm import RecordedRequest, Reply, ScriptedLLM

MODEL = "anthropic/claude-test"

SERVER_REPO = (
    Path(os.environ["SEMA_INTERLEAVE_SERVER_REPO"])
    if os.environ.get("SEMA_INTERLEAVE_SERVER_REPO")
    else None
)
"""A checkout to run the server from instead of this one (e.g. a baseline build)."""

STATS: collections.Counter[str] = collections.Counter()
"""Rules run, examples, violations found: what a run covered."""

_LLM: ScriptedLLM | None = None


def scripted_llm() -> ScriptedLLM:
    """One model server for the whole run (each example resets it)."""
    global _LLM
    if _LLM is None:
        _LLM = ScriptedLLM().start()
    return _LLM


def _env(llm: ScriptedLLM, root: Path) -> dict[str, str]:
    (root / "sema").mkdir()
    (root / "home").mkdir()
    return {
        "HOME": str(root / "home"),
        "SEMA_ROOT": str(root / "sema"),
        "ANTHROPIC_API_KEY": "sk-ant-test-key-000000",
        "ANTHROPIC_BASE_URL": llm.url,
        "OPENAI_API_KEY": "sk-test-openai-000000",
        "OPENAI_BASE_URL": llm.openai_url,
        "SEMA_MAX_RETRIES": "0",
        "SEMA_LOG_LEVEL": "ERROR",
    }


def _request_text(request: RecordedRequest) -> str:
    return json.dumps(request.body)


class Prompt:
    def __init__(self, msg_id: str, sid: str, text: str, gen: int, sent_at: int, with_stop: bool):
        self.id = msg_id
        self.sid = sid
        self.text = text
        self.gen = gen
        self.sent_at = sent_at
        self.with_stop = with_stop
        self.lost = False
        """Its process was killed before it answered: no answer is owed."""


class SessionLifeMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.llm = scripted_llm()
        self.llm.reset()
        self.tmp = Path(tempfile.mkdtemp(prefix="sema-interleave-"))
        self.env = _env(self.llm, self.tmp)
        self.workspace = self.tmp / "ws"
        self.workspace.mkdir()
        self.rng = random.Random(0)
        self.llm.fallback = self._reply
        self.peer: RawPeer | None = None
        self.peers: list[RawPeer] = []
        self.gen = 0
        self.sid = ""
        self.ids = 0
        self.prompts: dict[str, Prompt] = {}
        self.stops: list[tuple[str, str, int, list[str]]] = []
        """(stop request id, session, process generation, the prompts open when sent)."""
        self.closed: dict[str, tuple[int, str]] = {}
        """session → (process generation, the close request's id)."""
        self.consent = "allow"
        self.decisions: dict[str, str] = {}
        """tool call id → allow / reject / never."""
        self.writes = 0
        self.model_seen_from = 0
        """Model requests before this index were checked (or belong to a closed session)."""
        STATS["examples"] += 1

    # ------------------------------------------------------------------ plumbing

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def next_id(self, kind: str) -> str:
        self.ids += 1
        return f"{kind}{self.ids}"

    def _reply(self, request: RecordedRequest) -> Reply:
        """The model's reply: after a tool result, text; otherwise text or a Write."""
        text = _request_text(request)
        last = request.body.get("messages", [{}])[-1] if isinstance(request.body, dict) else {}
        after_tool = "tool_result" in json.dumps(last)
        if not after_tool and self.rng.random() < 0.35 and "resume-check" not in text:
            self.writes += 1
            call = f"w{self.writes}"
            path = self.workspace / f"out-{self.writes}.txt"
            return Reply.tools([("Write", {"file_path": str(path), "content": "x"}, call)])
        deltas = self.rng.choice([3, 20, 200])
        return Reply.text(f"answer {self.rng.randrange(10**6)} " * 2, deltas=deltas, delay_s=0.004)

    def _on_request(self, method: str, params: dict[str, Any]) -> Any:
        """The client's consent, as the current policy says (never: left unanswered)."""
        if method == "tool:permission:request":
            call = params.get("toolCallId", "")
            self.decisions[call] = self.consent
            STATS[f"consent {self.consent}"] += 1
            if self.consent == "never":
                return None
            return {"decision": "allow_once" if self.consent == "allow" else "reject"}
        if method == "session/request_permission":
            call = params.get("toolCall", {}).get("toolCallId", "")
            self.decisions[call] = self.consent
            STATS[f"consent {self.consent}"] += 1
            if self.consent == "never":
                return None
            option = "allow_once" if self.consent == "allow" else "reject_once"
            return {"outcome": {"outcome": "selected", "optionId": option}}
        if method in ("fs/read_text_file", "fs/write_text_file"):
            return None
        return {}

    @property
    def acp(self) -> bool:
        assert self.peer is not None
        return self.peer.dialect == "acp"

    async def _start(self, dialect: str) -> None:
        self.gen += 1
        self.peer = await RawPeer(
            self.env, dialect, on_request=self._on_request, cwd=SERVER_REPO
        ).start()
        self.peers.append(self.peer)
        if dialect == "acp":
            await self.peer.call(
                "init", "initialize", {"protocolVersion": 1, "clientCapabilities": {}}
            )
        else:
            await self.peer.call(
                "init",
                "initialize",
                {"protocolVersion": 1, "capabilities": {"permissions": True}},
            )

    async def _open(self, resume: str | None = None, *, kept: bool = True) -> None:
        """A new session, or `resume` one; `kept`: the session must have a history (ACP
        knows a session only from its history: one nothing reached is unknown)."""
        assert self.peer is not None
        msg_id = self.next_id("open")
        if self.acp:
            if resume is None:
                params = {"cwd": str(self.workspace), "mcpServers": []}
                result = await self.peer.call(msg_id, "session/new", params)
            else:
                params = {"sessionId": resume, "cwd": str(self.workspace), "mcpServers": []}
                self.peer.send(
                    {"jsonrpc": "2.0", "id": msg_id, "method": "session/resume", "params": params}
                )
                answer = await self.peer.answer(msg_id)
                if "error" in answer and not kept:
                    return await self._open()
                assert "result" in answer, answer
                result = answer["result"]
            self.sid = result.get("sessionId", resume)
        else:
            params = {"workingDir": str(self.workspace), "model": MODEL}
            if resume is not None:
                params["sessionId"] = resume
            self.sid = (await self.peer.call(msg_id, "session/create", params))["sessionId"]

    def _prompt_message(self, msg_id: str, text: str, steer: bool = False) -> dict[str, Any]:
        if self.acp:
            params: dict[str, Any] = {
                "sessionId": self.sid,
                "prompt": [{"type": "text", "text": text}],
            }
        else:
            params = {"sessionId": self.sid, "input": text}
            if steer:
                params["delivery"] = "steer"
        return {"jsonrpc": "2.0", "id": msg_id, "method": "session/prompt", "params": params}

    def _open_prompts(self, sid: str | None = None) -> list[Prompt]:
        assert self.peer is not None
        return [
            p
            for p in self.prompts.values()
            if p.gen == self.gen
            and not p.lost
            and (sid is None or p.sid == sid)
            and not self.peer.answers(p.id)
        ]

    def _send_prompt(self, *, steer: bool = False, with_stop: bool = False) -> Prompt:
        assert self.peer is not None
        msg_id = self.next_id("p")
        text = f"input-{msg_id}"
        open_now = [p.id for p in self._open_prompts(self.sid)]
        # A native stop ends the turn that runs (or the one about to): this prompt only
        # when nothing else of the session is open. ACP's session/cancel ends them all.
        owed = with_stop and (self.acp or not open_now)
        prompt = Prompt(msg_id, self.sid, text, self.gen, len(self.peer.messages), owed)
        self.prompts[msg_id] = prompt
        messages = [self._prompt_message(msg_id, text, steer)]
        if with_stop:
            messages.append(self._stop_message([*open_now, msg_id]))
        self.peer.send(*messages)
        return prompt

    def _stop_message(self, open_ids: list[str]) -> dict[str, Any]:
        if self.acp:
            return {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": self.sid}}
        stop_id = self.next_id("stop")
        self.stops.append((stop_id, self.sid, self.gen, open_ids))
        return {
            "jsonrpc": "2.0",
            "id": stop_id,
            "method": "session/interrupt",
            "params": {"sessionId": self.sid},
        }

    # ------------------------------------------------------------------ rules

    @initialize(dialect=st.sampled_from(DIALECTS), seed=st.integers(0, 2**32 - 1))
    def start(self, dialect: str, seed: int) -> None:
        self.rng.seed(seed)
        STATS[f"dialect {dialect}"] += 1
        self.run(self._start(dialect))
        self.run(self._open())

    @rule(delay=st.sampled_from([0, 0.01, 0.05, 0.2]))
    def prompt(self, delay: float) -> None:
        STATS["prompt"] += 1
        self._send_prompt()
        self.run(asyncio.sleep(delay))

    @rule()
    def prompt_then_stop(self) -> None:
        """The stop in the same write as its prompt (Stop a moment after Enter)."""
        STATS["prompt+stop in one write"] += 1
        prompt = self._send_prompt(with_stop=True)
        if prompt.with_stop:
            assert self.peer is not None
            try:
                self.run(self.peer.answer(prompt.id, timeout=20))
            except TimeoutError:
                raise AssertionError(f"{prompt.id}, stopped in its own write, ran on") from None
            self.stops_end_their_turn()

    @precondition(lambda self: self.peer is not None and self.peer.dialect != "acp")
    @rule()
    def steer(self) -> None:
        STATS["steer"] += 1
        self._send_prompt(steer=True)

    @rule(delay=st.sampled_from([0, 0.02, 0.1]))
    def stop(self, delay: float) -> None:
        assert self.peer is not None
        STATS["stop"] += 1
        self.peer.send(self._stop_message([p.id for p in self._open_prompts(self.sid)]))
        self.run(asyncio.sleep(delay))

    @rule(data=st.data())
    def cancel_request(self, data: st.DataObject) -> None:
        assert self.peer is not None
        open_now = self._open_prompts()
        if not open_now:
            return
        STATS["$/cancelRequest"] += 1
        target = data.draw(st.sampled_from(open_now)).id
        if self.acp:
            self.peer.send(
                {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": target}}
            )
        else:
            self.peer.send(
                {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": target}}
            )

    @rule(mode=st.sampled_from(["default", "plan", "acceptEdits"]))
    def mode(self, mode: str) -> None:
        assert self.peer is not None
        STATS["mode change"] += 1
        msg_id = self.next_id("mode")
        if self.acp:
            params = {"sessionId": self.sid, "modeId": mode}
            self.peer.send(
                {"jsonrpc": "2.0", "id": msg_id, "method": "session/set_mode", "params": params}
            )
        elif mode == "acceptEdits":
            params = {"sessionId": self.sid, "permissionMode": mode}
            self.peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": msg_id,
                    "method": "permissionMode/update",
                    "params": params,
                }
            )
        else:
            params = {"sessionId": self.sid, "mode": "Plan" if mode == "plan" else "Agent"}
            self.peer.send(
                {"jsonrpc": "2.0", "id": msg_id, "method": "mode/update", "params": params}
            )

    @precondition(lambda self: self.peer is not None and self.peer.dialect != "acp")
    @rule()
    def permission_mode_default(self) -> None:
        assert self.peer is not None
        STATS["permission mode default"] += 1
        params = {"sessionId": self.sid, "permissionMode": "default"}
        msg_id = self.next_id("pm")
        self.peer.send(
            {"jsonrpc": "2.0", "id": msg_id, "method": "permissionMode/update", "params": params}
        )

    @rule(answer=st.sampled_from(["allow", "reject", "never"]))
    def consent_answers(self, answer: str) -> None:
        STATS["consent policy"] += 1
        self.consent = answer

    @rule(delay=st.sampled_from([0.05, 0.3, 1.0]))
    def wait(self, delay: float) -> None:
        STATS["wait"] += 1
        self.run(asyncio.sleep(delay))

    @rule()
    def close(self) -> None:
        assert self.peer is not None
        STATS["close"] += 1
        msg_id = self.next_id("close")
        method = "session/close" if self.acp else "session/dispose"
        self.closed[self.sid] = (self.gen, msg_id)
        open_now = self._open_prompts(self.sid)
        self.peer.send(
            {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {"sessionId": self.sid}}
        )
        answer = self.run(self.peer.answer(msg_id, timeout=30))
        assert "result" in answer, answer
        # Closing ends the session's work: every prompt open then answers, stopped
        # (ACP: `cancelled`; native: `interrupted` unless its turn had ended).
        for prompt in open_now:
            try:
                got = self.run(self.peer.answer(prompt.id, timeout=10))
            except TimeoutError:
                raise AssertionError(f"{prompt.id} not answered after its session closed") from None
            reason = (got.get("result") or {}).get("stopReason")
            if self.acp:
                assert reason == "cancelled", (prompt.id, got)
        self.model_seen_from = len(self.llm.requests)
        self.run(self._open())

    @rule(how=st.sampled_from(["kill -9", "end of input"]))
    def crash_and_resume(self, how: str) -> None:
        assert self.peer is not None
        STATS[how] += 1
        dialect = self.peer.dialect
        completes = [
            m.params
            for m in self.peer.notifications("message:complete")
            if m.params.get("sessionId") == self.sid
        ]
        seen = [r for r in self.llm.requests[self.model_seen_from :]]
        inputs = {
            p.text
            for p in self.prompts.values()
            if p.sid == self.sid and any(p.text in _request_text(r) for r in seen)
        }
        if how == "kill -9":
            self.run(self.peer.kill9())
            for p in self._open_prompts():
                p.lost = True
        else:
            self.peer.eof()
            code = self.run(self.peer.close(timeout=30))
            assert code == 0, f"exit code {code}"
            unanswered = [p.id for p in self._open_prompts()]
            assert unanswered == [], f"prompts unanswered at end of input: {unanswered}"
        sid = self.sid
        self.run(self._start(dialect))
        self.run(self._open(resume=sid, kept=bool(inputs or completes)))
        before = len(self.llm.requests)
        prompt = self._send_prompt()
        found = self.run(
            self.peer.wait_for(
                lambda: next(
                    (r for r in self.llm.requests[before:] if prompt.text in _request_text(r)),
                    None,
                ),
                timeout=30,
            )
        )
        body = found.body
        text = json.dumps(body)
        for complete in completes:
            content = complete.get("content") or ""
            if content:
                assert content in "".join(_texts(body)), f"lost message:complete {content!r}"
            for call in complete.get("toolCalls") or []:
                assert call["id"] in text, f"lost tool call {call['id']}"
        for value in inputs:
            assert value in text, f"lost input {value!r}"
        uses = [b["id"] for b in _blocks(body) if b.get("type") == "tool_use"]
        results = [b["tool_use_id"] for b in _blocks(body) if b.get("type") == "tool_result"]
        assert sorted(uses) == sorted(results), (uses, results)
        self.model_seen_from = before

    # ------------------------------------------------------------------ invariants

    @invariant()
    def answered_at_most_once(self) -> None:
        for peer in self.peers:
            counts = collections.Counter(
                m.msg.get("id")
                for m in peer.messages
                if "method" not in m.msg and str(m.msg.get("id", "")).startswith("p")
            )
            twice = [k for k, n in counts.items() if n > 1]
            assert twice == [], f"answered twice: {twice}"

    @invariant()
    def nothing_after_close(self) -> None:
        for sid, (gen, close_id) in self.closed.items():
            peer = self.peers[gen - 1]
            answer = peer.answers(close_id)
            if not answer:
                continue
            at = peer.messages.index(answer[0])
            after = [
                m.msg.get("method")
                for m in peer.messages[at + 1 :]
                if "method" in m.msg and m.params.get("sessionId") == sid
            ]
            assert after == [], f"{after} after the close of {sid}"

    @invariant()
    def seq_without_gaps(self) -> None:
        for peer in self.peers:
            if peer.dialect == "acp":
                continue
            last: dict[str, int] = {}
            for m in peer.messages:
                seq = m.params.get("seq")
                sid = m.params.get("sessionId")
                if "method" not in m.msg or not isinstance(seq, int) or not sid:
                    continue
                expected = last.get(sid, seq - 1) + 1
                assert seq == expected, f"{m.method} seq {seq}, expected {expected}"
                last[sid] = seq

    @invariant()
    def stops_end_their_turn(self) -> None:
        stopped = {"interrupted", "cancelled"}
        for p in self.prompts.values():
            if not p.with_stop or p.lost:
                continue
            answer = self.peers[p.gen - 1].answers(p.id)
            if answer:
                result = answer[0].msg.get("result") or {}
                assert result.get("stopReason") in stopped, (p.id, answer[0].msg)
        for stop_id, sid, gen, open_ids in self.stops:
            peer = self.peers[gen - 1]
            answer = peer.answers(stop_id)
            if not answer or len(open_ids) != 1:
                continue
            prompt = self.prompts[open_ids[0]]
            prompt_answer = peer.answers(prompt.id)
            if not prompt_answer:
                continue
            at = peer.messages.index(answer[0])
            reason = (prompt_answer[0].msg.get("result") or {}).get("stopReason")
            if answer[0].msg.get("result") == {"interrupted": True}:
                assert reason in ("interrupted", None), (stop_id, prompt.id, reason)
            elif reason != "interrupted":
                # Found nothing to stop: the prompt had ended, as the wire says first.
                ended_first = peer.messages.index(prompt_answer[0]) < at or any(
                    m.method == "state:update"
                    and m.params.get("sessionId") == sid
                    and m.params.get("state") == "idle"
                    for m in peer.messages[prompt.sent_at : at]
                )
                assert ended_first, f"{stop_id} found nothing to stop; {prompt.id} ran on"

    @invariant()
    def no_tool_without_consent(self) -> None:
        for call, decision in self.decisions.items():
            if decision == "allow" or not call.startswith("w"):
                continue
            path = self.workspace / f"out-{call[1:]}.txt"
            assert not path.exists(), f"{call} ran with consent {decision}"

    def check_all(self) -> None:
        """Every invariant, now (teardown, and the replayed regression examples)."""
        self.answered_at_most_once()
        self.nothing_after_close()
        self.seq_without_gaps()
        self.stops_end_their_turn()
        self.no_tool_without_consent()

    # ------------------------------------------------------------------ the end

    def teardown(self) -> None:
        try:
            if self.peer is not None and self.peer.running:
                self.peer.eof()
                self.run(self.peer.close(timeout=30))
                unanswered = [p.id for p in self._open_prompts()]
                assert unanswered == [], f"prompts unanswered at the end: {unanswered}"
                # What arrived after the last step is held to the same rules.
                self.check_all()
        finally:
            for peer in self.peers:
                if peer.running:
                    self.run(peer.kill9())
            self.llm.fallback = None
            self.loop.close()
            shutil.rmtree(self.tmp, ignore_errors=True)


def _blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            out.extend(b for b in content if isinstance(b, dict))
    return out


def _texts(body: dict[str, Any]) -> list[str]:
    out = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
    out.extend(b.get("text", "") for b in _blocks(body) if b.get("type") == "text")
    return out

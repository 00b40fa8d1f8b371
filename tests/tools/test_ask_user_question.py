from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from sema_rpc.protocol import AskQuestionRequestParams, AskQuestionResult
from sema_rpc.tools.ask_user_question import NOT_ASKED, AskUserQuestionTool
from sema_rpc.tools.base import ToolContext

from ._helpers import args_of, run

tool = AskUserQuestionTool()

QUESTION = {
    "question": "Which database should we use?",
    "header": "Database",
    "options": [
        {"label": "SQLite (Recommended)", "description": "No server"},
        {"label": "Postgres", "description": "Scales"},
    ],
    "multiSelect": False,
}


async def test_answers_come_from_the_engine_callback(ctx: ToolContext) -> None:
    seen: list[Any] = []

    async def ask_user(questions: list[dict], call_id: str) -> dict:
        seen.append(questions)
        assert call_id == ctx.tool_call_id, "the request names the asking call"
        # The engine sends them as the wire request and validates the client's answer.
        AskQuestionRequestParams.model_validate({"toolCallId": call_id, "questions": questions})
        answer = AskQuestionResult.model_validate({"answers": {QUESTION["question"]: "Postgres"}})
        return {"answers": answer.answers}

    ctx.services.ask_user = ask_user
    out = await run(tool, ctx, questions=[QUESTION])
    assert not out.is_error
    assert '"Which database should we use?" = "Postgres"' in out.content
    assert seen[0][0]["multiSelect"] is False and seen[0][0]["options"][1]["label"] == "Postgres"
    assert tool.read_only and tool.permission(args_of(tool, questions=[QUESTION]), ctx) is None
    assert tool.title(args_of(tool, questions=[QUESTION])) == "Ask: Database"


async def test_client_cannot_answer(ctx: ToolContext) -> None:
    out = await run(tool, ctx, questions=[QUESTION])  # no callback at all
    assert out.content == NOT_ASKED and not out.is_error

    async def no_client(_questions: list[dict], _call_id: str) -> None:
        return None

    ctx.services.ask_user = no_client
    assert (await run(tool, ctx, questions=[QUESTION])).content == NOT_ASKED


def test_input_limits() -> None:
    with pytest.raises(ValidationError):
        args_of(tool, questions=[])
    with pytest.raises(ValidationError):
        args_of(tool, questions=[QUESTION] * 5)
    with pytest.raises(ValidationError):
        args_of(tool, questions=[{**QUESTION, "options": QUESTION["options"][:1]}])
    with pytest.raises(ValidationError):
        args_of(tool, questions=[{**QUESTION, "options": QUESTION["options"] * 3}])


async def test_duplicate_questions_are_refused(ctx: ToolContext) -> None:
    out = await run(tool, ctx, questions=[QUESTION, QUESTION])
    assert out.is_error and "different" in out.content

"""The wire types of issue 5 (context and extensibility)."""

from __future__ import annotations

from sema_rpc import protocol
from sema_rpc.protocol import (
    AskQuestionRequestParams,
    ClientCapabilities,
    PlanExitRequestParams,
    TaskAgentEndParams,
    TaskAgentStartParams,
    ToolListResult,
)


def test_registered() -> None:
    for name in ("file:reference", "task:agent:start", "task:agent:end"):
        assert name in protocol.NOTIFICATIONS
    caps = ClientCapabilities.model_fields
    for name, capability in (
        ("ask:question:request", "ask_question"),
        ("plan:exit:request", "plan_exit"),
    ):
        spec = protocol.SERVER_REQUESTS[name]
        assert spec.params.event == name
        assert protocol.to_camel(capability) == spec.capability and capability in caps
    assert {"command/list", "tool/list"} <= set(protocol.METHODS)


def test_camel_case_on_the_wire() -> None:
    start = TaskAgentStartParams(task_id="t1", subagent_type="Explore", description="d", prompt="p")
    assert {"taskId", "subagentType"} <= set(start.wire())
    end = TaskAgentEndParams(task_id="t1", status="completed", content="done")
    assert end.wire()["status"] == "completed"
    ask = AskQuestionRequestParams.model_validate(
        {
            "toolCallId": "call_1",
            "questions": [
                {
                    "question": "q?",
                    "header": "h",
                    "options": [{"label": "a"}, {"label": "b"}],
                    "multiSelect": True,
                }
            ],
        }
    )
    assert ask.wire()["questions"][0]["multiSelect"] is True
    assert ask.wire()["toolCallId"] == "call_1"
    plan = PlanExitRequestParams(
        tool_call_id="call_2", plan_file_path="/p.md", plan_content="x", options=["keepPlanning"]
    )
    assert {"toolCallId", "planFilePath", "planContent"} <= set(plan.wire())
    tools = ToolListResult.model_validate(
        {
            "tools": [
                {
                    "name": "Read",
                    "description": "r",
                    "source": "builtin",
                    "enabled": True,
                    "readOnly": True,
                }
            ]
        }
    )
    assert tools.wire()["tools"][0]["readOnly"] is True

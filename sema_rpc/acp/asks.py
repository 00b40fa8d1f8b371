"""The engine's questions to the user as `session/request_permission`.

- a tool's consent: allow_once / allow_always (when the call has a rule an "always"
  answer can store: the same rule our native dialect stores, per project) / reject_once /
  reject_always (the rule is refused without asking for the rest of the session);
- ExitPlanMode: "Yes, and auto-accept edits" (allow_always: leaves Plan, permission mode
  acceptEdits), "Yes, and ask before edits" (allow_once), "Yes, clear the context and
  start" (allow_once), "No, keep planning" (reject_once);
- a project's MCP servers (`ProjectTrust`): trust once / always trust this project's
  definition / do not start them (no reject_always: a refusal holds for the session);
- AskUserQuestion: one request per question, one allow_once option per answer and a
  reject_once "Skip"; a client that advertises `elicitation` (form mode) gets one
  `elicitation/create` form instead.

A `cancelled` outcome (the client's answer after `session/cancel`) is a refusal; the
prompt itself answers `cancelled`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sema_rpc.acp import translate
from sema_rpc.protocol import (
    AskQuestionRequestParams,
    AskQuestionResult,
    PermissionRequestParams,
    PermissionResult,
    PlanExitRequestParams,
    PlanExitResult,
)

if TYPE_CHECKING:
    from sema_rpc.acp.state import AcpPeer, AcpSession

_NAMES = {
    "allow_once": "Allow",
    "allow_always": "Always allow",
    "reject_once": "Reject",
    "reject_always": "Always reject",
}
_TRUST_NAMES = {
    "allow_once": "Trust once (this session)",
    "allow_always": "Always trust this project's definition",
    "reject_once": "Do not start them",
}


def _selected(answer: Any) -> str | None:
    """The option id the client chose; None when it answered `cancelled`."""
    outcome = answer["outcome"]
    if outcome["outcome"] == "selected":
        return str(outcome["optionId"])
    return None


async def permission(
    server: AcpPeer, state: AcpSession, event: PermissionRequestParams
) -> PermissionResult:
    rule = event.always_rule
    if rule is not None and rule in state.rejected_rules:
        return PermissionResult(decision="reject")
    from sema_rpc.core.trust import TRUST_TOOL

    trusting = event.tool_name == TRUST_TOOL  # a project's programs: once, always, or no
    kinds = ["allow_once"]
    if "allow_always" in event.options:
        kinds.append("allow_always")
    kinds += ["reject_once"] if trusting else ["reject_once", "reject_always"]
    options = []
    for kind in kinds:
        name = _TRUST_NAMES[kind] if trusting else _NAMES[kind]
        if kind == "allow_always" and rule and not trusting:
            name = f"Always allow {rule}"
        options.append({"optionId": kind, "name": name, "kind": kind})
    content = translate.diff_content(event.tool_name, event.input, state.cwd) or (
        [translate.text_content(event.content)] if event.content else []
    )
    tool_call = {
        "toolCallId": event.tool_call_id,
        "title": event.title,
        "kind": translate.tool_kind(event.tool_name),
        "status": "pending",
        "rawInput": event.input,
        "content": content,
    }
    answer = await server.request(
        "session/request_permission",
        {"sessionId": state.session_id, "toolCall": tool_call, "options": options},
    )
    chosen = _selected(answer)
    if chosen == "allow_once":
        return PermissionResult(decision="allow_once")
    if chosen == "allow_always":
        return PermissionResult(decision="allow_always")
    if chosen == "reject_always" and rule is not None:
        state.rejected_rules.add(rule)
    return PermissionResult(decision="reject")


async def plan_exit(
    server: AcpPeer, state: AcpSession, event: PlanExitRequestParams
) -> PlanExitResult:
    options = [
        {"optionId": "acceptEdits", "name": "Yes, and auto-accept edits", "kind": "allow_always"},
        {"optionId": "startEditing", "name": "Yes, and ask before edits", "kind": "allow_once"},
        {
            "optionId": "clearContextAndStart",
            "name": "Yes, clear the context and start",
            "kind": "allow_once",
        },
        {"optionId": "keepPlanning", "name": "No, keep planning", "kind": "reject_once"},
    ]
    tool_call = {
        "toolCallId": event.tool_call_id,
        "title": "Ready to code?",
        "kind": "switch_mode",
        "status": "pending",
        "content": [translate.text_content(event.plan_content)],
        "locations": [{"path": event.plan_file_path, "line": 1}],
    }
    answer = await server.request(
        "session/request_permission",
        {"sessionId": state.session_id, "toolCall": tool_call, "options": options},
    )
    chosen = _selected(answer)
    if chosen in ("acceptEdits", "startEditing"):
        if chosen == "acceptEdits":
            from sema_rpc.protocol import PermissionModeUpdateParams

            server.engine.update_permission_mode(
                PermissionModeUpdateParams(
                    session_id=state.session_id, permission_mode="acceptEdits"
                )
            )
        return PlanExitResult(decision="startEditing")
    if chosen == "clearContextAndStart":
        return PlanExitResult(decision="clearContextAndStart")
    return PlanExitResult(decision="keepPlanning")


async def questions(
    server: AcpPeer, state: AcpSession, event: AskQuestionRequestParams
) -> AskQuestionResult | None:
    elicitation = server.capabilities.elicitation
    if isinstance(elicitation, dict) and elicitation.get("form") is not None:
        return await _elicit(server, state, event)
    answers: dict[str, str] = {}
    tool_call_id = event.tool_call_id
    for question in event.questions:
        options = [
            {"optionId": f"o{i}", "name": o.label, "kind": "allow_once"}
            for i, o in enumerate(question.options)
        ]
        options.append({"optionId": "skip", "name": "Skip", "kind": "reject_once"})
        tool_call = {
            "toolCallId": tool_call_id,
            "title": question.question,
            "kind": "other",
            "status": "pending",
            "content": [
                translate.text_content(
                    "\n".join(f"- {o.label}: {o.description}" for o in question.options)
                )
            ],
        }
        answer = await server.request(
            "session/request_permission",
            {"sessionId": state.session_id, "toolCall": tool_call, "options": options},
        )
        chosen = _selected(answer)
        if chosen is None:  # cancelled: no answers at all
            return None
        if (
            chosen.startswith("o")
            and chosen[1:].isdigit()
            and int(chosen[1:]) < len(question.options)
        ):
            answers[question.question] = question.options[int(chosen[1:])].label
    return AskQuestionResult(answers=answers)


async def _elicit(
    server: AcpPeer, state: AcpSession, event: AskQuestionRequestParams
) -> AskQuestionResult | None:
    properties: dict[str, Any] = {}
    keys: dict[str, str] = {}
    for i, question in enumerate(event.questions):
        key = f"q{i}"
        keys[key] = question.question
        labels = [o.label for o in question.options]
        if question.multi_select:
            properties[key] = {
                "type": "array",
                "title": question.header or question.question,
                "description": question.question,
                "items": {"type": "string", "enum": labels},
            }
        else:
            properties[key] = {
                "type": "string",
                "title": question.header or question.question,
                "description": question.question,
                "enum": labels,
            }
    answer = await server.request(
        "elicitation/create",
        {
            "sessionId": state.session_id,
            "toolCallId": event.tool_call_id,
            "mode": "form",
            "message": "The agent has questions for you",
            "requestedSchema": {"type": "object", "properties": properties},
        },
    )
    if answer.get("action") != "accept":
        return None
    content = answer.get("content") or {}
    answers: dict[str, str] = {}
    for key, asked in keys.items():
        value = content.get(key)
        if isinstance(value, list):
            answers[asked] = ", ".join(str(v) for v in value)
        elif value is not None:
            answers[asked] = str(value)
    return AskQuestionResult(answers=answers)

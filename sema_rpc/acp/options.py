"""Session modes, config options (mode, model, thought level, sandbox) and slash commands.

Modes are sent both ways while clients migrate: the older `modes` and the newer
`configOptions` (a `mode` select). The model list is the models.json profiles plus the
providers' defaults for the keys in the environment; the thought level turns the
profile's extended thinking on or off; the sandbox is the OS sandbox commands run in
(category `_sandbox`: only `off` where the kernel has none, its description says why).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sema_rpc.acp.translate import MODES
from sema_rpc.protocol import (
    ModeUpdateParams,
    PermissionModeUpdateParams,
    RpcError,
    SessionSetSandboxParams,
)
from sema_rpc.rpc.errors import INVALID_PARAMS

if TYPE_CHECKING:
    from sema_rpc.engine.engine import SemaEngine
    from sema_rpc.engine.session.session import Session


BUILTIN_COMMANDS = [
    ("clear", "Start a new conversation (the history stays on disk)", None),
    ("compact", "Summarise the conversation to free context", "optional instructions"),
]


def current_mode(session: Session) -> str:
    return "plan" if session.mode == "Plan" else session.permission_mode


def mode_state(session: Session) -> dict[str, Any]:
    return {
        "currentModeId": current_mode(session),
        "availableModes": [{"id": i, "name": n, "description": d} for i, n, d in MODES],
    }


def set_mode(engine: SemaEngine, session: Session, mode_id: str) -> None:
    if mode_id not in {m[0] for m in MODES}:
        raise RpcError(
            INVALID_PARAMS,
            f"unknown mode: {mode_id!r} (modes: {', '.join(m[0] for m in MODES)})",
        )
    if mode_id == "plan":
        engine.update_mode(ModeUpdateParams(session_id=session.id, mode="Plan"))
        return
    engine.update_permission_mode(
        PermissionModeUpdateParams(session_id=session.id, permission_mode=mode_id)
    )
    if session.mode == "Plan":
        engine.update_mode(ModeUpdateParams(session_id=session.id, mode="Agent"))


def model_choices(engine: SemaEngine, session: Session) -> tuple[list[tuple[str, str]], str]:
    """((value, name) of each model the session can use, the current one): the engine's
    model list (models.json profiles, the environment's default, the session's own)."""
    from sema_rpc.core.errors import ConfigError

    try:
        listed = engine.list_models(session.id)
    except ConfigError:  # a broken models.json: only the session's own model
        name = session.profile.name if session.profile is not None else ""
        return ([(name, name)] if name else []), name
    choices = []
    for m in listed.models:
        spec = f"{m.provider}/{m.model}"
        choices.append((m.name, m.name if m.name == spec else f"{m.name} ({spec})"))
    return choices, listed.current or ""


def config_options(engine: SemaEngine, session: Session) -> list[dict[str, Any]]:
    models, current = model_choices(engine, session)
    thinking = session.profile is not None and session.profile.thinking
    return [
        {
            "id": "mode",
            "name": "Mode",
            "category": "mode",
            "type": "select",
            "currentValue": current_mode(session),
            "options": [{"value": i, "name": n, "description": d} for i, n, d in MODES],
        },
        {
            "id": "model",
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": current,
            "options": [{"value": v, "name": n} for v, n in models],
        },
        {
            "id": "thought_level",
            "name": "Thinking",
            "category": "thought_level",
            "type": "select",
            "currentValue": "on" if thinking else "off",
            "options": [
                {"value": "off", "name": "Off"},
                {"value": "on", "name": "Extended thinking"},
            ],
        },
        sandbox_option(session),
    ]


SANDBOX_MODES = [
    (
        "workspace-write",
        "Sandbox: workspace",
        "Commands write only in the workspace (not .git/), no network",
    ),
    ("read-only", "Sandbox: read-only", "Commands cannot write (but a temp dir) or connect"),
    ("off", "No sandbox", "Commands run unconfined (consent as without a sandbox)"),
]


def sandbox_option(session: Session) -> dict[str, Any]:
    box = session.services.sandbox
    modes = SANDBOX_MODES if box.reason is None else SANDBOX_MODES[-1:]
    option: dict[str, Any] = {
        "id": "sandbox",
        "name": "Sandbox",
        "category": "_sandbox",
        "type": "select",
        "currentValue": box.mode,
        "options": [{"value": v, "name": n, "description": d} for v, n, d in modes],
    }
    if box.reason is not None:
        option["description"] = f"Unavailable: {box.reason}"
    return option


def set_option(engine: SemaEngine, session: Session, config_id: str, value: str | bool) -> None:
    if config_id == "sandbox":
        from sema_rpc.core.errors import InvalidArgument

        if value not in {m[0] for m in SANDBOX_MODES}:
            raise RpcError(
                INVALID_PARAMS, f"sandbox is one of {', '.join(m[0] for m in SANDBOX_MODES)}"
            )
        try:
            engine.set_sandbox(SessionSetSandboxParams(session_id=session.id, mode=value))
        except InvalidArgument as exc:
            raise RpcError(INVALID_PARAMS, exc.message) from exc
        return
    if config_id == "mode":
        set_mode(engine, session, str(value))
        return
    if config_id == "model":
        _set_model(engine, session, str(value), None)
        return
    if config_id == "thought_level":
        if value not in ("on", "off"):
            raise RpcError(INVALID_PARAMS, f"thought_level is 'on' or 'off', not {value!r}")
        if session.profile is None:
            raise RpcError(INVALID_PARAMS, "the session has no model")
        _set_model(engine, session, session.profile.name, value == "on")
        return
    raise RpcError(INVALID_PARAMS, f"unknown config option: {config_id!r}")


def _set_model(engine: SemaEngine, session: Session, name: str, thinking: bool | None) -> None:
    """The session's model from its next model call on (recorded: a resume keeps it)."""
    engine.set_model(session.id, name, thinking)


def available_commands(session: Session) -> list[dict[str, Any]]:
    """Custom commands (project and user), skills, and the built-in /clear and /compact."""
    from sema_rpc.core.project.custom_commands import list_commands
    from sema_rpc.core.project.skills import list_skills

    commands: list[dict[str, Any]] = []
    seen: set[str] = set()
    for name, description, hint in BUILTIN_COMMANDS:
        commands.append(_command(name, description, hint))
        seen.add(name)
    for command in list_commands(session.working_dir):
        if command.name not in seen:
            seen.add(command.name)
            commands.append(_command(command.name, command.description, command.argument_hint))
    for skill in list_skills(session.working_dir):
        if skill.name not in seen:
            seen.add(skill.name)
            commands.append(_command(skill.name, skill.description, "what to do with it"))
    return commands


def _command(name: str, description: str, hint: str | None) -> dict[str, Any]:
    command: dict[str, Any] = {"name": name, "description": description or name}
    if hint:
        command["input"] = {"hint": hint}
    return command


def skill_prompt(text: str, session: Session) -> str:
    """`/<skill> args` (a skill the editor offered as a command) asks the model to use it;
    custom commands and /clear, /compact are the engine's own business."""
    if not text.startswith("/"):
        return text
    name, _, rest = text[1:].partition(" ")
    from sema_rpc.core.project.custom_commands import list_commands
    from sema_rpc.core.project.skills import list_skills

    if name in ("clear", "compact") or any(
        c.name == name for c in list_commands(session.working_dir)
    ):
        return text
    if any(s.name == name for s in list_skills(session.working_dir)):
        ask = f'Use the "{name}" skill (Skill tool).'
        return f"{ask} {rest.strip()}" if rest.strip() else ask
    return text

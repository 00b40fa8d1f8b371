"""Which models a session can use, and what switching to one changes in the loop.

Shared by the server's engine (`SemaEngine.list_models` / `set_model`) and the embedded
`ConversationManager`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sema_rpc.core.config import ModelProfile, UnknownModel, load_models, resolve_model
from sema_rpc.core.errors import InvalidArgument

if TYPE_CHECKING:
    from sema_rpc.protocol import ModelInfo, ModelListResult

__all__ = ["available_models", "loop_settings", "model_info", "profile_for"]


def available_models(current: ModelProfile | None = None) -> ModelListResult:
    """The models.json profiles (`default`: the one the `main` pointer names; without
    one, the model the environment's key gives, listed too), plus `current` when it is
    none of them; `current` named in the result. Raises ConfigError for a broken
    models.json."""
    from sema_rpc.protocol import ModelListResult

    config = load_models()
    default = config.pointers.get("main")
    profiles = list(config.profiles.values())
    if default is None:
        fallback = resolve_model(None)  # the environment's default, if any
        if fallback is not None:
            default = fallback.name
            profiles.append(fallback)
    if current is not None and current.name not in {p.name for p in profiles}:
        profiles.append(current)
    return ModelListResult(
        models=[model_info(p, default=p.name == default) for p in profiles],
        current=current.name if current is not None else None,
    )


def model_info(profile: ModelProfile, *, default: bool) -> ModelInfo:
    """A profile as `model/list` shows it (never its key or endpoint)."""
    from sema_rpc.protocol import ModelInfo, ModelPrice

    return ModelInfo(
        name=profile.name,
        provider=profile.provider,
        model=profile.model_name,
        context_length=profile.context_length,
        images=bool(profile.images),
        thinking=profile.thinking,
        default=default,
        price=ModelPrice.model_validate(profile.price.public()) if profile.price else None,
    )


def profile_for(name: str, thinking: bool | None = None) -> ModelProfile:
    """The profile `session/setModel` switches to. Raises InvalidArgument for a name that
    is no profile and no usable `provider/model-id` (the message lists the profiles),
    ConfigError when the model cannot run (no API key, a broken models.json)."""
    try:
        profile = resolve_model(name)
    except UnknownModel as exc:
        known = ", ".join(load_models().profiles) or "none in models.json"
        raise InvalidArgument(
            f"unknown model {name!r}: the known models are {known}"
            " (or give provider/model-id, e.g. anthropic/claude-sonnet-4-5)",
            {"model": name},
        ) from exc
    if profile is None:  # an empty name
        raise InvalidArgument("model must name a model (see model/list)", {"model": name})
    if thinking is not None and thinking != profile.thinking:
        profile = profile.replace(thinking=thinking)
    return profile


def loop_settings(profile: ModelProfile) -> dict[str, Any]:
    """The loop settings (`LoopConfig` fields) a profile decides."""
    return {
        "model": profile.model_name,
        "max_tokens": profile.max_tokens,
        "context_length": profile.context_length,
        "thinking_budget": max(1024, min(profile.max_tokens // 2, 4000))
        if profile.thinking
        else None,
    }

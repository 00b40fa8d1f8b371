"""Profile → provider instance, imported lazily and cached; warm-up in the background.

    provider = provider_for(resolve_model("anthropic/claude-sonnet-4-5"))
    warm_up(profile)   # once a session names its model: imports + HTTP client off the loop

    # `--record DIR`: one recording provider per session, closed with the session
    provider = provider_for(profile, record_to=recording.cassette_path(DIR, session_id))
    ...
    await provider.aclose()

Providers are cached per (provider, base_url, api_key, stream idle timeout, transport) — for replay per cassette path, so
one process plays a cassette once across sessions (`ReplayProvider.reset()` rewinds).
Recording providers are cached per (provider, base_url, api_key, cassette path): calling
`provider_for` every turn returns the same one; after `aclose()` it reopens on next use.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sema_rpc.core.config import ConfigError, ModelProfile, max_retries, stream_idle_timeout

if TYPE_CHECKING:
    from sema_rpc.core.stream import Provider

__all__ = ["aclose_all", "clear_cache", "provider_for", "warm_up"]

log = logging.getLogger("sema_rpc.providers")

_Key = tuple[str, str | None, str | None, float | None, str]
_cache: dict[_Key, Provider] = {}
_recording: dict[tuple[str, str | None, str | None, float | None, str, str], Provider] = {}
_lock = threading.Lock()
_warming: dict[str, threading.Thread] = {}

_SDK_FOR = {"anthropic": "anthropic", "openai": "openai", "openai-responses": "openai"}
_MODULE_FOR = {
    "anthropic": "sema_rpc.providers.anthropic",
    "openai": "sema_rpc.providers.openai_chat",
    "openai-responses": "sema_rpc.providers.openai_responses",
}
# Imported on the first request otherwise (on the loop): the HTTP transport.
_TRANSPORT_MODULES = ["sema_rpc.providers.transport"]
_SDK_TRANSPORT_MODULES = ["httpx2", "httpcore2", "anyio._backends._asyncio"]


_BASE_URL_ENV = {
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "OPENAI_BASE_URL",
    "openai-responses": "OPENAI_BASE_URL",
}


def _base_url(profile: ModelProfile) -> str | None:
    """Where the profile's requests go as its provider resolves it (the profile's base
    URL, else the provider's environment variable); None: the provider's https default."""
    env = _BASE_URL_ENV.get(profile.provider)
    return profile.base_url or (os.environ.get(env) if env else None) or None


def _cache_key(profile: ModelProfile) -> _Key:
    if profile.provider == "replay":
        return ("replay", profile.model_name, None, None, "http")
    idle = stream_idle_timeout(profile.stream_idle_timeout)
    return (profile.provider, profile.base_url, profile.api_key, idle, profile.transport)


def _create(profile: ModelProfile, http_client: Any = None) -> Provider:
    p = profile.provider
    idle = stream_idle_timeout(profile.stream_idle_timeout)
    if p == "anthropic":
        from sema_rpc.providers.anthropic import AnthropicProvider

        return AnthropicProvider(
            profile.api_key,
            profile.base_url,
            max_retries=max_retries(),
            idle_timeout=idle,
            http_client=http_client,
            transport=profile.transport,
        )
    if p == "openai":
        from sema_rpc.providers.openai_chat import OpenAIChatProvider

        return OpenAIChatProvider(
            profile.api_key,
            profile.base_url,
            max_retries=max_retries(),
            idle_timeout=idle,
            http_client=http_client,
            transport=profile.transport,
        )
    if p == "replay":
        from sema_rpc.providers.replay import ReplayProvider

        return ReplayProvider(profile.model_name)
    if p == "openai-responses":
        try:
            mod = importlib.import_module("sema_rpc.providers.openai_responses")
        except ImportError:
            raise ConfigError("provider 'openai-responses' is not available yet") from None
        return mod.OpenAIResponsesProvider(
            profile.api_key,
            profile.base_url,
            max_retries=max_retries(),
            idle_timeout=idle,
            http_client=http_client,
            transport=profile.transport,
        )
    raise ConfigError(f"unknown provider {p!r} in profile {profile.name!r}")


def _create_recording(profile: ModelProfile, paths: list[Path]) -> Provider:
    if profile.provider not in _SDK_FOR:
        raise ConfigError(f"unknown provider {profile.provider!r} in profile {profile.name!r}")
    from sema_rpc.providers.recording import RecordingProvider

    try:
        return RecordingProvider(
            profile.provider, lambda http: _create(profile, http_client=http), paths
        )
    except OSError as e:
        where = ", ".join(str(p) for p in paths)
        raise ConfigError(f"cannot record to {where}: {e.strerror or e}") from None


RecordTo = str | Path | Sequence[str | Path]


def provider_for(profile: ModelProfile, record_to: RecordTo | None = None) -> Provider:
    """The (cached) provider for a profile. Raises ConfigError for an unknown provider.

    `record_to`: a cassette file (see `recording.cassette_path`), or several: every model
    exchange is appended to each, replayable with `replay/<path>`. A replay profile is
    never recorded.
    """
    targets = [record_to] if isinstance(record_to, str | Path) else list(record_to or [])
    if targets and profile.provider != "replay":
        paths = [Path(t).expanduser().resolve() for t in targets]
        rkey = (*_cache_key(profile), "\n".join(str(p) for p in paths))
        with _lock:
            provider = _recording.get(rkey)
            if provider is None:
                provider = _recording[rkey] = _create_recording(profile, paths)
            return provider
    key = _cache_key(profile)
    with _lock:
        provider = _cache.get(key)
        if provider is None:
            provider = _cache[key] = _create(profile)
        return provider


def _kinds_for(profile: ModelProfile) -> list[str]:
    """The providers a profile talks to (a cassette may hold several)."""
    if profile.provider == "replay":
        from sema_rpc.providers.replay import cassette_providers

        kinds = cassette_providers(profile.model_name)
        return sorted({"openai" if k == "openai-chat" else k for k in kinds} & set(_MODULE_FOR))
    return [profile.provider] if profile.provider in _MODULE_FOR else []


def _import_quietly(modules: list[str]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # the real use reports the problem
            log.debug("warm-up import of %s failed", name, exc_info=True)


def warm_up(profile: ModelProfile | None) -> threading.Thread | None:
    """Prepare the profile's first request in a daemon thread, once per provider: import
    the HTTP library and the provider module, and build the first HTTP client (its CA
    store loaded too when the profile's base URL is https). The SDK only for a
    `transport: "sdk"` profile. Returns the thread (None
    when there is nothing to do). Safe to call repeatedly."""
    if profile is None:
        return None
    with _lock:
        key = profile.provider if profile.provider != "replay" else f"replay:{profile.model_name}"
        if profile.transport == "sdk":
            key += ":sdk"
        thread = _warming.get(key)
        if thread is not None:
            return thread

        # Not for a replay (its kinds come from the cassette, read in the thread).
        builds = (
            profile.provider in _MODULE_FOR
            and profile.provider != "replay"
            and profile.transport != "sdk"
        )
        if builds:
            from sema_rpc.providers import http

            http.prewarm_due()  # the first request waits for this thread's client

        def run() -> None:
            try:
                kinds = _kinds_for(profile)
                # http first: it lets httpx2 and httpcore2 skip importlib.metadata. The
                # light path's own transport needs neither; only the SDKs' does.
                mods = ["sema_rpc.providers.http", *_TRANSPORT_MODULES]
                if profile.transport == "sdk":
                    mods += [*_SDK_TRANSPORT_MODULES, *sorted({_SDK_FOR[k] for k in kinds})]
                mods += [_MODULE_FOR[k] for k in kinds]
                _import_quietly(mods)
            finally:
                if builds:
                    try:
                        http.prewarm(_base_url(profile))  # ends the announced warm-up
                    except Exception:  # the real use reports the problem
                        log.debug("warm-up of the HTTP client failed", exc_info=True)

        thread = threading.Thread(target=run, name=f"warm-{key}", daemon=True)
        _warming[key] = thread
    thread.start()
    return thread


def clear_cache() -> None:
    """Forget cached providers (tests)."""
    with _lock:
        _cache.clear()
        _recording.clear()


async def aclose_all() -> None:
    """Close every cached provider's HTTP client (at shutdown), recording files too."""
    with _lock:
        providers = [*_cache.values(), *_recording.values()]
        _cache.clear()
        _recording.clear()
    for p in providers:
        try:
            await p.aclose()
        except Exception:
            log.debug("error closing provider", exc_info=True)

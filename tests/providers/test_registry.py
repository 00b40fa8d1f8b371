"""registry: cached providers, lazy modules, background warm-up."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sema_rpc.core.config import ConfigError, ModelProfile
from sema_rpc.providers import registry


@pytest.fixture(autouse=True)
def _clean_cache() -> None:
    registry.clear_cache()


def test_provider_for_caches_per_connection() -> None:
    a1 = registry.provider_for(ModelProfile("a", "anthropic", "claude-x", api_key="k1"))
    a2 = registry.provider_for(ModelProfile("b", "anthropic", "claude-y", api_key="k1"))
    a3 = registry.provider_for(ModelProfile("c", "anthropic", "claude-x", api_key="k2"))
    o1 = registry.provider_for(ModelProfile("d", "openai", "gpt-4o", api_key="k1"))
    assert a1 is a2 and a1 is not a3
    assert type(a1).__name__ == "AnthropicProvider"
    assert type(o1).__name__ == "OpenAIChatProvider"
    assert "k1" not in repr(a1)


def test_unknown_provider() -> None:
    with pytest.raises(ConfigError):
        registry.provider_for(ModelProfile("x", "nope", "m"))


def _warm(profile: str) -> list[str]:
    code = (
        "import sys\n"
        "from sema_rpc.core.config import ModelProfile\n"
        "from sema_rpc.providers import registry\n"
        "assert not {'openai', 'anthropic', 'httpx2'} & set(sys.modules)\n"
        f"p = {profile}\n"
        "t = registry.warm_up(p)\n"
        "assert registry.warm_up(p) is t\n"
        "t.join(30)\n"
        "from sema_rpc.providers import http\n"
        "mods = ('openai', 'anthropic', 'httpx2', 'sema_rpc.providers.openai_chat')\n"
        "print(*(m in sys.modules for m in mods), len(http._prebuilt))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return out.stdout.split()


def test_warm_up_prepares_the_light_path_without_the_sdk() -> None:
    # The provider module and one client of our own transport; no SDK, no httpx2.
    got = _warm("ModelProfile('o', 'openai', 'gpt-4o')")
    assert got == ["False", "False", "False", "True", "1"]
    assert registry.warm_up(None) is None


def test_warm_up_imports_the_sdk_for_an_sdk_profile() -> None:
    got = _warm("ModelProfile('o', 'openai', 'gpt-4o', transport='sdk')")
    assert got == ["True", "False", "True", "True", "0"]


def test_transport_is_part_of_the_cache_key() -> None:
    light = registry.provider_for(ModelProfile("a", "anthropic", "claude-x", api_key="k"))
    sdk = registry.provider_for(
        ModelProfile("a", "anthropic", "claude-x", api_key="k", transport="sdk")
    )
    assert light is not sdk
    assert (light.transport, sdk.transport) == ("http", "sdk")  # type: ignore[attr-defined]


def test_the_first_client_is_the_warm_ups_even_when_asked_for_before_it_is_ready() -> None:
    """Asked for while the warm-up still imports, the first client waits for the one the
    warm-up builds instead of building a second (the same imports and CA store load
    twice): once the warm-up is over, no spare client is left behind."""
    code = (
        "import sys\n"
        "from sema_rpc.core.config import ModelProfile\n"
        "from sema_rpc.providers import registry, http\n"
        "t = registry.warm_up(ModelProfile('a', 'anthropic', 'claude-x'))\n"
        "client = http._make()\n"
        "t.join(30)\n"
        "print(t.is_alive(), len(http._prebuilt), type(client).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["False", "0", "AsyncClient"]

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


def test_warm_up_imports_sdk_in_background() -> None:
    code = (
        "import sys\n"
        "from sema_rpc.core.config import ModelProfile\n"
        "from sema_rpc.providers import registry\n"
        "assert 'openai' not in sys.modules\n"
        "t = registry.warm_up(ModelProfile('o', 'openai', 'gpt-4o'))\n"
        "assert registry.warm_up(ModelProfile('o', 'openai', 'gpt-4o')) is t\n"
        "t.join(30)\n"
        "print('openai' in sys.modules, 'anthropic' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["True", "False"]
    assert registry.warm_up(None) is None

"""config: models.json profiles and pointers, model specs, environment fallback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sema_rpc.core.config import (
    ConfigError,
    ModelProfile,
    load_models,
    max_retries,
    resolve_model,
    sema_root,
    stream_idle_timeout,
)

ENV_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "SEMA_MAX_RETRIES",
    "SEMA_STREAM_IDLE_TIMEOUT",
)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEMA_ROOT", str(tmp_path))
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def write_models(root: Path, data: object) -> None:
    (root / "models.json").write_text(json.dumps(data) if not isinstance(data, str) else data)


MODELS = {
    "profiles": {
        "sonnet": {
            "provider": "anthropic",
            "modelName": "claude-sonnet-4-5",
            "apiKey": "sk-ant-secret",
            "maxTokens": 16000,
            "contextLength": 200000,
            "thinking": True,
        },
        "local": {
            "provider": "openai",
            "modelName": "qwen3-coder",
            "baseURL": "http://localhost:8000/v1",
        },
    },
    "pointers": {"main": "sonnet", "quick": "local"},
}


def test_sema_root(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert sema_root() == root
    monkeypatch.delenv("SEMA_ROOT")
    assert sema_root() == Path.home() / ".sema"


def test_no_models_no_env(root: Path) -> None:
    assert load_models().profiles == {}
    assert resolve_model(None) is None


def test_profiles_and_pointers(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_models(root, MODELS)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-env")
    main = resolve_model(None)
    assert main == ModelProfile(
        name="sonnet",
        provider="anthropic",
        model_name="claude-sonnet-4-5",
        api_key="sk-ant-secret",
        max_tokens=16000,
        context_length=200000,
        thinking=True,
    )
    assert "sk-ant-secret" not in repr(main) and "sk-ant-secret" not in str(main.public())  # type: ignore[union-attr]
    quick = resolve_model(None, pointer="quick")
    assert quick is not None and quick.name == "local"
    assert quick.base_url == "http://localhost:8000/v1"
    assert quick.api_key == "sk-openai-env"  # profile has none → environment
    assert (quick.max_tokens, quick.context_length, quick.thinking) == (8192, 128000, False)
    assert resolve_model("local") == quick
    # An unknown pointer falls back to main.
    assert resolve_model(None, pointer="compact") == main


def test_provider_model_specs(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://proxy:1234")
    p = resolve_model("anthropic/claude-sonnet-4-5")
    assert p is not None
    assert (p.provider, p.model_name, p.api_key, p.base_url) == (
        "anthropic",
        "claude-sonnet-4-5",
        "sk-ant-env",
        "http://proxy:1234",
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-env")
    p = resolve_model("openai/gpt-oss/120b")
    assert p is not None and (p.provider, p.model_name, p.api_key) == (
        "openai",
        "gpt-oss/120b",
        "sk-openai-env",
    )
    p = resolve_model("openai-responses/gpt-5")
    assert p is not None and p.provider == "openai-responses"
    p = resolve_model("claude-opus-4-1")  # a bare, recognisable model id
    assert p is not None and p.provider == "anthropic"
    with pytest.raises(ConfigError, match="unknown provider 'mistral'"):
        resolve_model("mistral/large")
    with pytest.raises(ConfigError, match="unknown model 'mystery'"):
        resolve_model("mystery")
    with pytest.raises(ConfigError, match="missing the model id"):
        resolve_model("openai/")


def test_a_model_without_its_key_is_a_config_error(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resolving names the missing variable (and the models.json for a profile) instead of
    leaving the SDK to fail at the first request."""
    with pytest.raises(
        ConfigError, match=r"'anthropic/claude-x' needs an API key: set ANTHROPIC_API_KEY"
    ):
        resolve_model("anthropic/claude-x")
    with pytest.raises(ConfigError, match="needs an API key: set OPENAI_API_KEY"):
        resolve_model("gpt-4.1")
    with pytest.raises(ConfigError, match="needs an API key: set OPENAI_API_KEY"):
        resolve_model("openai-responses/gpt-5")
    write_models(root, MODELS)
    with pytest.raises(ConfigError) as info:
        resolve_model("local")
    assert "profile 'local' needs an API key: set OPENAI_API_KEY" in str(info.value)
    assert f'"apiKey" in {root / "models.json"}' in str(info.value)
    # A profile's own key, or the Anthropic SDK's bearer token, is enough.
    assert resolve_model("sonnet") is not None
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "gateway-token")
    assert resolve_model("anthropic/claude-x") is not None


def test_env_fallback(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    p = resolve_model(None)
    assert p is not None and (p.provider, p.model_name, p.api_key) == ("openai", "gpt-4.1", "sk-o")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-a")
    p = resolve_model(None)
    assert p is not None
    assert (p.provider, p.model_name, p.api_key) == ("anthropic", "claude-sonnet-4-5", "sk-a")


def test_replay_specs(root: Path, tmp_path: Path) -> None:
    p = resolve_model("replay/demo")
    assert p is not None and p.provider == "replay"
    assert p.model_name.endswith("sema_rpc/data/cassettes/demo.jsonl")
    own = tmp_path / "mine.jsonl"
    own.write_text("")
    p = resolve_model(f"replay/{own}")
    assert p is not None and p.model_name == str(own)
    with pytest.raises(ConfigError, match="cassette not found"):
        resolve_model("replay/nope")


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('{"profiles": {', r"invalid JSON at line 1, column 15"),
        ("[1, 2]", "expected a JSON object"),
        ({"profiles": []}, '"profiles" must be an object'),
        ({"profiles": {"x": {"modelName": "m"}}}, "profile 'x': missing \"provider\""),
        ({"profiles": {"x": {"provider": "anthropic"}}}, 'missing "modelName"'),
        (
            {"profiles": {"x": {"provider": "cohere", "modelName": "m"}}},
            "unknown provider 'cohere'",
        ),
        (
            {"profiles": {"x": {"provider": "openai", "modelName": "m", "maxTokens": "big"}}},
            "maxTokens: expected a positive integer",
        ),
        (
            {"profiles": {"x": {"provider": "openai", "modelName": "m", "streamIdleTimeout": 0}}},
            "streamIdleTimeout: expected a positive number of seconds",
        ),
        ({"profiles": {}, "pointers": {"main": "ghost"}}, "pointer 'main' names 'ghost'"),
    ],
)
def test_corrupt_models_json(root: Path, content: object, match: str) -> None:
    write_models(root, content)
    with pytest.raises(ConfigError, match=match) as info:
        resolve_model(None)
    assert str(root / "models.json") in str(info.value)


def test_max_retries(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert max_retries() == 2
    monkeypatch.setenv("SEMA_MAX_RETRIES", "5")
    assert max_retries() == 5
    monkeypatch.setenv("SEMA_MAX_RETRIES", "lots")
    assert max_retries() == 2


def test_stream_idle_timeout(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert stream_idle_timeout() == 300.0
    for raw, value in [("45", 45.0), ("2.5", 2.5), ("0", None), ("off", None), ("soon", 300.0)]:
        monkeypatch.setenv("SEMA_STREAM_IDLE_TIMEOUT", raw)
        assert stream_idle_timeout() == value
    # A profile's streamIdleTimeout wins over the environment; an unknown model's context
    # window is the documented default.
    write_models(
        root,
        {
            "profiles": {
                "slow": {
                    "provider": "openai",
                    "modelName": "o3",
                    "apiKey": "sk-test",
                    "streamIdleTimeout": 900,
                }
            }
        },
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    slow = resolve_model("slow")
    assert slow is not None and slow.public()["streamIdleTimeout"] == 900.0
    unknown = resolve_model("anthropic/some-new-model")
    assert unknown is not None and unknown.context_length == 128_000
    monkeypatch.setenv("SEMA_STREAM_IDLE_TIMEOUT", "off")
    assert unknown.public()["streamIdleTimeout"] is None


def test_imports_stay_light(root: Path) -> None:
    """config and the provider registry import no SDK and no pydantic; a corrupt
    models.json does not break the import."""
    write_models(root, "{broken")
    code = (
        "import sys, sema_rpc.core.config, sema_rpc.providers.registry;"
        "bad = [m for m in ('anthropic', 'openai', 'pydantic', 'httpx2') if m in sys.modules];"
        "print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    )
    assert out.stdout.strip() == "[]"


def test_profile_keys_are_redacted_once_loaded(root: Path) -> None:
    from sema_rpc.core.secrets import redact

    models = json.loads(json.dumps(MODELS))
    models["profiles"]["local"]["apiKey"] = "plain-local-key-42"  # not shaped like sk-…
    write_models(root, models)
    assert redact("key plain-local-key-42 here") == "key plain-local-key-42 here"
    load_models()
    assert redact("key plain-local-key-42 here") == "key [REDACTED] here"


def test_images_capability_explicit_or_inferred(root: Path) -> None:
    write_models(
        root,
        {
            "profiles": {
                "sonnet": {
                    "provider": "anthropic",
                    "modelName": "claude-sonnet-4-5",
                    "apiKey": "k",
                },
                "mini": {"provider": "openai", "modelName": "o3-mini", "apiKey": "k"},
                "local": {"provider": "openai", "modelName": "qwen3", "apiKey": "none"},
                "vl": {
                    "provider": "openai",
                    "modelName": "qwen2.5-vl",
                    "apiKey": "none",
                    "images": True,
                },
                "blind": {
                    "provider": "anthropic",
                    "modelName": "claude-haiku-4-5",
                    "apiKey": "k",
                    "images": False,
                },
            }
        },
    )
    got = {name: p.images for name, p in load_models().profiles.items()}
    assert got == {"sonnet": True, "mini": False, "local": False, "vl": True, "blind": False}
    assert load_models().profiles["vl"].public()["images"] is True
    # A spec without a profile is inferred from its model id too.
    for spec, images in (("openai/gpt-4o-2024-08-06", True), ("openai/gpt-3.5-turbo", False)):
        p = ModelProfile(name=spec, provider="openai", model_name=spec.split("/", 1)[1])
        assert p.images is images, spec


def test_price_builtin_override_or_unknown(root: Path) -> None:
    write_models(
        root,
        {
            "profiles": {
                "sonnet": {
                    "provider": "anthropic",
                    "modelName": "claude-sonnet-4-5-20250929",
                    "apiKey": "k",
                },
                "cheap": {
                    "provider": "anthropic",
                    "modelName": "claude-sonnet-4-5",
                    "apiKey": "k",
                    "price": {"input": 1, "output": 2, "cacheRead": 0.5},
                },
                "local": {"provider": "openai", "modelName": "qwen3", "apiKey": "none"},
                "pro": {"provider": "openai", "modelName": "o3-pro", "apiKey": "k"},
            }
        },
    )
    profiles = load_models().profiles
    # Anthropic's published list price for Sonnet 4.5, dated snapshot included.
    assert profiles["sonnet"].public()["price"] == {
        "input": 3.0,
        "output": 15.0,
        "cacheRead": 0.3,
        "cacheWrite": 3.75,
    }
    # A cache price left out of an override is the input price.
    assert profiles["cheap"].public()["price"] == {
        "input": 1.0,
        "output": 2.0,
        "cacheRead": 0.5,
        "cacheWrite": 1.0,
    }
    # Unknown models (also a sibling of a known one) have no price, not a guess.
    assert profiles["local"].price is None and profiles["pro"].price is None


@pytest.mark.parametrize(
    ("field", "match"),
    [
        ({"images": "yes"}, '"images" must be true or false'),
        ({"price": {"input": 1}}, '"price" needs "output"'),
        ({"price": {"input": 1, "output": -2}}, 'price "output" must be a number >= 0'),
        ({"price": 3}, '"price" must be an object'),
    ],
)
def test_images_and_price_validation(root: Path, field: dict[str, object], match: str) -> None:
    write_models(
        root, {"profiles": {"p": {"provider": "openai", "modelName": "m", "apiKey": "k", **field}}}
    )
    with pytest.raises(ConfigError, match=match):
        load_models()


def test_builtin_prices_follow_snapshots_and_their_exceptions() -> None:
    from sema_rpc.core.catalog import builtin_price

    # A dated snapshot costs what its model costs ...
    assert builtin_price("gpt-4o-2024-08-06") == builtin_price("gpt-4o")
    assert builtin_price("claude-3-5-haiku-latest") == builtin_price("claude-3-5-haiku")
    # ... unless it was priced apart: the first GPT-4o snapshot listed at $5 / $15.
    first = builtin_price("gpt-4o-2024-05-13")
    assert first is not None and (first.input, first.output) == (5.0, 15.0)

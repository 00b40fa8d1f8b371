"""Configuration: the sema root, model profiles and how a model spec resolves to one.

`$SEMA_ROOT/models.json` (default root `~/.sema`)::

    {
      "profiles": {
        "sonnet": {"provider": "anthropic", "modelName": "claude-sonnet-4-5",
                   "maxTokens": 8192, "contextLength": 200000, "thinking": true,
                   "streamIdleTimeout": 300},
        "local":  {"provider": "openai", "modelName": "qwen3", "baseURL": "http://localhost:8000/v1",
                   "apiKey": "none"}
      },
      "pointers": {"main": "sonnet", "quick": "local"}
    }

A model spec is a profile name, `provider/model-id` (split on the first slash, so
`openai/gpt-oss/120b` keeps `gpt-oss/120b`), or `replay/<cassette>` (`replay/demo` is the
bundled demo cassette; anything else is a path). API keys and base URLs come from the
profile, else from ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL or OPENAI_API_KEY /
OPENAI_BASE_URL, else from what `sema-rpc login` stored (`core.credentials`): a stored
key comes with its stored base URL, and a base URL in the environment still wins.

Profile fields: `provider` and `modelName` (required); `baseURL`, `apiKey`; `maxTokens`
(the answer's limit, default 8192); `contextLength` (the model's context window in tokens,
default 128,000 — the figure compaction and the tool-result budget work from, so set it
for a model whose window differs: a `provider/model-id` spec without a profile always
gets the default); `thinking` (extended thinking, default false); `streamIdleTimeout`
(seconds a model stream may send nothing before the turn fails, default
`$SEMA_STREAM_IDLE_TIMEOUT`, else 300); `transport` (`"http"`, the default: the request is
sent and its stream read by sema-rpc itself, with the official SDK's retry policy and
defaults; `"sdk"`: through the provider's official SDK, for what only the SDK does);
`images` (whether the model takes image input; default: inferred from the model id for
known families — Claude 3 and later, GPT-4o/4.1/5, o1/o3/o4-mini — else false); `price`
(`{"input", "output", "cacheRead", "cacheWrite"}` in USD per million tokens; default: the
built-in list price of a known model, else none, and costs are reported as null).

Stdlib only: this module is imported at startup and must stay cheap.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sema_rpc.core.catalog import Price, builtin_price, infer_images, price_from_json
from sema_rpc.core.credentials import load_credentials, stored_credential
from sema_rpc.core.errors import ConfigError, UnknownModel
from sema_rpc.core.root import sema_root
from sema_rpc.core.secrets import register_secret
from sema_rpc.plain_record import Record

__all__ = [
    "PROVIDERS",
    "TRANSPORTS",
    "ConfigError",
    "ModelProfile",
    "ModelsConfig",
    "Price",
    "UnknownModel",
    "bundled_cassette",
    "load_models",
    "max_retries",
    "models_path",
    "recording_workspace",
    "resolve_model",
    "sema_root",
    "stream_idle_timeout",
]

PROVIDERS = ("anthropic", "openai", "openai-responses", "replay")
TRANSPORTS = ("http", "sdk")
_PROVIDER_ALIASES = {"openai-chat": "openai", "claude": "anthropic"}

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"
DEFAULT_OPENAI_MODEL = "gpt-4.1"

_DATA_DIR = Path(__file__).resolve().parent.parent / "data"


def models_path() -> Path:
    return sema_root() / "models.json"


def max_retries() -> int:
    """SDK retries for 429 / 529 / 5xx / connection errors: `$SEMA_MAX_RETRIES`, default 2."""
    try:
        return max(0, int(os.environ.get("SEMA_MAX_RETRIES", "2")))
    except ValueError:
        return 2


DEFAULT_CONTEXT_LENGTH = 128_000
"""The context window assumed for a model whose profile does not give `contextLength`."""
DEFAULT_STREAM_IDLE_TIMEOUT = 300.0
"""Seconds a model stream may stay silent before it is given up (see `stream_idle_timeout`)."""


def stream_idle_timeout(profile_value: float | None = None) -> float | None:
    """How long a model stream may send nothing before it fails (seconds; None: no limit
    beyond the SDK's own 10 minutes). The profile's `streamIdleTimeout`, else
    `$SEMA_STREAM_IDLE_TIMEOUT` (`0` or `off` disables it), else 300 s: reasoning models
    can think silently for minutes (Anthropic's keep-alive `ping` events count as activity)."""
    if profile_value is not None:
        return profile_value
    raw = os.environ.get("SEMA_STREAM_IDLE_TIMEOUT", "").strip().lower()
    if not raw:
        return DEFAULT_STREAM_IDLE_TIMEOUT
    if raw in ("off", "none", "no", "false"):
        return None
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_STREAM_IDLE_TIMEOUT
    if value != value or value < 0:  # NaN or negative: ignored
        return DEFAULT_STREAM_IDLE_TIMEOUT
    return value or None


class ModelProfile(Record):
    # Plain classes (every server loads this module; a dataclass costs its creation).
    # A copy with changes: `profile.replace(thinking=True)`.
    __slots__ = (
        "api_key",
        "base_url",
        "context_length",
        "images",
        "max_tokens",
        "model_name",
        "name",
        "price",
        "provider",
        "stream_idle_timeout",
        "thinking",
        "transport",
    )
    _fields = (
        "name",
        "provider",
        "model_name",
        "base_url",
        "api_key",
        "max_tokens",
        "context_length",
        "thinking",
        "stream_idle_timeout",
        "transport",
        "images",
        "price",
    )

    name: str
    provider: str
    """anthropic | openai | openai-responses | replay"""
    model_name: str
    """The provider's model id (for replay: the cassette path)."""
    base_url: str | None
    api_key: str | None
    """Never in the repr."""
    max_tokens: int
    context_length: int
    thinking: bool
    stream_idle_timeout: float | None
    """Seconds; None: `$SEMA_STREAM_IDLE_TIMEOUT`, else the default (`stream_idle_timeout`)."""
    transport: str
    """http (sema-rpc's own request path) | sdk (the provider's official SDK)"""
    images: bool | None
    """Whether the model takes image input; None at construction: inferred from the model
    id for known families (`core.catalog.infer_images`), so it is a bool afterwards."""
    price: Price | None
    """USD per million tokens; None at construction: the built-in list price of a known
    model, else it stays None (costs unknown)."""

    def __init__(
        self,
        name: str,
        provider: str,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 8192,
        context_length: int = DEFAULT_CONTEXT_LENGTH,
        thinking: bool = False,
        stream_idle_timeout: float | None = None,
        transport: str = "http",
        images: bool | None = None,
        price: Price | None = None,
    ) -> None:
        self.name = name
        self.provider = provider
        self.model_name = model_name
        self.base_url = base_url
        self.api_key = api_key
        self.max_tokens = max_tokens
        self.context_length = context_length
        self.thinking = thinking
        self.stream_idle_timeout = stream_idle_timeout
        self.transport = transport
        self.images = infer_images(provider, model_name) if images is None else images
        if price is None and provider != "replay":
            price = builtin_price(model_name)
        self.price = price

    def __repr__(self) -> str:
        inner = ", ".join(
            [f"{name}={getattr(self, name)!r}" for name in self._fields if name != "api_key"]
        )
        return f"ModelProfile({inner})"

    def public(self) -> dict[str, Any]:
        """A JSON-safe view without the API key (for model/list, logs, events)."""
        return {
            "name": self.name,
            "provider": self.provider,
            "modelName": self.model_name,
            "baseURL": self.base_url,
            "maxTokens": self.max_tokens,
            "contextLength": self.context_length,
            "thinking": self.thinking,
            "streamIdleTimeout": stream_idle_timeout(self.stream_idle_timeout),
            "transport": self.transport,
            "images": bool(self.images),
            "price": self.price.public() if self.price else None,
        }


class ModelsConfig(Record):
    __slots__ = ("path", "pointers", "profiles")
    _fields = ("profiles", "pointers", "path")

    profiles: dict[str, ModelProfile]
    pointers: dict[str, str]
    path: Path | None

    def __init__(
        self,
        profiles: dict[str, ModelProfile] | None = None,
        pointers: dict[str, str] | None = None,
        path: Path | None = None,
    ) -> None:
        self.profiles = {} if profiles is None else profiles
        self.pointers = {} if pointers is None else pointers
        self.path = path


def _normalise_provider(provider: str, where: str) -> str:
    p = _PROVIDER_ALIASES.get(provider, provider)
    if p not in PROVIDERS:
        raise ConfigError(
            f"{where}: unknown provider {provider!r} (expected one of: {', '.join(PROVIDERS)})"
        )
    return p


def _int(value: Any, default: int, where: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{where}: expected a positive integer, got {value!r}")
    return value


def _seconds(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"{where}: expected a positive number of seconds, got {value!r}")
    return float(value)


def _profile_from_json(name: str, raw: Any, path: Path) -> ModelProfile:
    where = f"{path}: profile {name!r}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected an object, got {type(raw).__name__}")
    provider = raw.get("provider")
    model = raw.get("modelName") or raw.get("model")
    if not isinstance(provider, str) or not provider:
        raise ConfigError(f'{where}: missing "provider"')
    if not isinstance(model, str) or not model:
        raise ConfigError(f'{where}: missing "modelName"')
    base_url = raw.get("baseURL", raw.get("baseUrl"))
    api_key = raw.get("apiKey")
    for key, val in (("baseURL", base_url), ("apiKey", api_key)):
        if val is not None and not isinstance(val, str):
            raise ConfigError(f'{where}: "{key}" must be a string')
    provider = _normalise_provider(provider, where)
    transport = raw.get("transport", "http")
    if transport not in TRANSPORTS:
        raise ConfigError(
            f'{where}: "transport" must be one of {", ".join(TRANSPORTS)}, got {transport!r}'
        )
    images = raw.get("images")
    if images is not None and not isinstance(images, bool):
        raise ConfigError(f'{where}: "images" must be true or false, got {images!r}')
    price: Price | None = None
    if raw.get("price") is not None:
        try:
            price = price_from_json(raw["price"], where)
        except ValueError as e:
            raise ConfigError(str(e)) from None
    register_secret(api_key)
    return ModelProfile(
        name=name,
        provider=provider,
        model_name=model,
        base_url=base_url or None,
        api_key=api_key or None,
        max_tokens=_int(raw.get("maxTokens"), 8192, f"{where}: maxTokens"),
        context_length=_int(
            raw.get("contextLength"), DEFAULT_CONTEXT_LENGTH, f"{where}: contextLength"
        ),
        thinking=bool(raw.get("thinking", False)),
        stream_idle_timeout=_seconds(raw.get("streamIdleTimeout"), f"{where}: streamIdleTimeout"),
        transport=transport,
        images=images,
        price=price,
    )


def load_models(path: Path | None = None) -> ModelsConfig:
    """Read models.json. A missing file is an empty config; a broken one is a ConfigError."""
    path = path or models_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ModelsConfig(path=path)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    if not text.strip():
        return ModelsConfig(path=path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{path}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f'{path}: expected a JSON object with "profiles" and "pointers"')
    raw_profiles = data.get("profiles")
    raw_pointers = data.get("pointers")
    raw_profiles = {} if raw_profiles is None else raw_profiles
    raw_pointers = {} if raw_pointers is None else raw_pointers
    if not isinstance(raw_profiles, dict):
        raise ConfigError(f'{path}: "profiles" must be an object of name → profile')
    if not isinstance(raw_pointers, dict):
        raise ConfigError(f'{path}: "pointers" must be an object like {{"main": "<name>"}}')
    profiles = {
        str(name): _profile_from_json(str(name), raw, path) for name, raw in raw_profiles.items()
    }
    pointers: dict[str, str] = {}
    for ptr, target in raw_pointers.items():
        if not isinstance(target, str) or target not in profiles:
            raise ConfigError(
                f"{path}: pointer {ptr!r} names {target!r}, which is not a profile"
                f" (profiles: {', '.join(profiles) or 'none'})"
            )
        pointers[str(ptr)] = target
    return ModelsConfig(profiles=profiles, pointers=pointers, path=path)


def bundled_cassette(name: str) -> Path:
    return _DATA_DIR / "cassettes" / f"{name}.jsonl"


def recording_workspace(spec: str | None) -> str | None:
    """The workspace a bundled recording was made in (`replay/demo` →
    `data/demo-workspace`), None for any other model: its tools must run on the files the
    recorded answers talk about, wherever the command is started."""
    if not spec or not spec.startswith("replay/"):
        return None
    name = spec.removeprefix("replay/")
    workspace = _DATA_DIR / f"{name}-workspace"
    if "/" in name or not bundled_cassette(name).is_file() or not workspace.is_dir():
        return None
    return str(workspace)


def _cassette_path(spec: str) -> Path:
    """`demo` → the bundled cassette; anything else is a path (`~` expanded)."""
    if spec and "/" not in spec and os.sep not in spec and not spec.endswith(".jsonl"):
        bundled = bundled_cassette(spec)
        if bundled.is_file():
            return bundled
    path = Path(spec).expanduser()
    if not path.is_file():
        raise ConfigError(f"replay cassette not found: {spec!r}")
    return path.resolve()


def _with_env(profile: ModelProfile, models: Path | None = None) -> ModelProfile:
    """Fill the API key and base URL from the environment where the profile has none;
    resolve a replay profile's cassette to an absolute path.

    A model that needs a key and has none is a ConfigError naming the variable (and the
    models.json when the profile comes from there), so the user learns it before any
    request instead of from the SDK's text at the first prompt. `models`: the models.json
    the profile was read from, None for a spec given on the command line or the wire.
    """
    if profile.provider == "replay":
        return profile.replace(model_name=str(_cassette_path(profile.model_name)))
    if profile.provider == "anthropic":
        key_var, url_var = "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"
    elif profile.provider in ("openai", "openai-responses"):
        key_var, url_var = "OPENAI_API_KEY", "OPENAI_BASE_URL"
    else:
        return profile
    api_key = profile.api_key or os.environ.get(key_var) or None
    # The Anthropic SDK also authenticates with a bearer token (gateways, proxies).
    token = profile.provider == "anthropic" and os.environ.get("ANTHROPIC_AUTH_TOKEN")
    stored = None
    if api_key is None and not token:
        stored = stored_credential(profile.provider)
        api_key = stored.api_key if stored else None
    if api_key is None and not token:
        if models is not None:
            raise ConfigError(
                f"profile {profile.name!r} needs an API key: set {key_var}, run `sema-rpc"
                f' login`, or give it an "apiKey" in {models} ("none" for a local server'
                " that takes no key)"
            )
        raise ConfigError(
            f"model {profile.name!r} needs an API key: set {key_var} or run `sema-rpc login`"
            f' (or use a profile with an "apiKey" in {models_path()})'
        )
    return profile.replace(
        api_key=api_key,
        base_url=profile.base_url
        or os.environ.get(url_var)
        or (stored.base_url if stored else None),
    )


def _infer_provider(model: str) -> str | None:
    m = model.lower()
    if m.startswith("claude"):
        return "anthropic"
    if m.startswith(("gpt-", "chatgpt", "o1", "o3", "o4")):
        return "openai"
    return None


def resolve_model(spec: str | None, pointer: str = "main") -> ModelProfile | None:
    """Turn a model spec into a profile; None when nothing is configured at all.

    Order: a profile name from models.json; `provider/model-id`; `replay/<cassette>`;
    a bare `claude-…` / `gpt-…` / `o3…` id. Without a spec: the pointer's profile (then the
    `main` pointer), else ANTHROPIC_API_KEY → anthropic/claude-sonnet-4-5, else
    OPENAI_API_KEY → openai/gpt-4.1, else a stored Anthropic key (the same model), else a
    stored OpenAI key (its stored model, else gpt-4.1), else None. Raises ConfigError for an unusable spec
    or a broken models.json.
    """
    cfg = load_models()
    if spec is not None:
        spec = spec.strip()
    if not spec:
        target = cfg.pointers.get(pointer) or cfg.pointers.get("main")
        if target:
            return _with_env(cfg.profiles[target], cfg.path)
        if os.environ.get("ANTHROPIC_API_KEY"):
            return resolve_model(f"anthropic/{DEFAULT_ANTHROPIC_MODEL}")
        if os.environ.get("OPENAI_API_KEY"):
            return resolve_model(f"openai/{DEFAULT_OPENAI_MODEL}")
        stored = load_credentials()
        if "anthropic" in stored:
            return resolve_model(f"anthropic/{DEFAULT_ANTHROPIC_MODEL}")
        if "openai" in stored:
            return resolve_model(f"openai/{stored['openai'].model or DEFAULT_OPENAI_MODEL}")
        return None
    if spec in cfg.profiles:
        return _with_env(cfg.profiles[spec], cfg.path)
    if "/" in spec:
        provider, model = spec.split("/", 1)
        try:
            provider = _normalise_provider(provider, f"model {spec!r}")
        except ConfigError as e:
            raise UnknownModel(e.message) from None
        if not model:
            raise UnknownModel(f"model {spec!r}: missing the model id after {provider!r}/")
        return _with_env(ModelProfile(name=spec, provider=provider, model_name=model))
    inferred = _infer_provider(spec)
    if inferred is None:
        known = ", ".join(cfg.profiles) or "none"
        raise UnknownModel(
            f"unknown model {spec!r}: not a profile in {cfg.path} (profiles: {known})"
            " and not of the form provider/model-id"
        )
    return _with_env(ModelProfile(name=spec, provider=inferred, model_name=spec))

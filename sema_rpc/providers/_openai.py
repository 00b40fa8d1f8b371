"""Helpers shared by the two OpenAI API providers (Chat Completions and Responses): the
request's URL, headers and body as the OpenAI SDK builds them, the models that take
`max_completion_tokens`, and the classification of OpenAI errors."""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

from sema_rpc.core.messages import ImageBlock
from sema_rpc.core.stream import ProviderError
from sema_rpc.providers._common import SdkProvider, kind_for_status
from sema_rpc.providers.http import OPENAI_BASE_URL, StatusError, StreamError, classify_other

# Models that take `max_completion_tokens` (and reject `max_tokens` / temperature).
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")


def data_url(image: ImageBlock) -> str:
    """An image as the `data:` URL the OpenAI APIs take for inline images."""
    return f"data:{image.source.media_type};base64,{image.source.data}"


def uses_max_completion_tokens(model: str) -> bool:
    return bool(_REASONING_MODEL.match(model.rsplit("/", 1)[-1].lower()))


def error_fields(body: object) -> tuple[str | None, str | None]:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            code = err.get("code") or err.get("type")
            msg = err.get("message")
            return (str(code) if code is not None else None), (
                msg if isinstance(msg, str) else None
            )
    if isinstance(body, str) and body:
        return None, body
    return None, None


def classify_status(status: int, body: Any, message: str, *, started: bool) -> ProviderError:
    """An error status → ProviderError, the same for both transports (`body` parsed,
    `message` the fallback `Error code: N - <body>`)."""
    code, emsg = error_fields(body)
    msg = emsg or message
    if started:
        return ProviderError("stream_error", msg, status=status, code=code)
    kind = kind_for_status(status, code, msg)
    return ProviderError(kind, msg, status=status, code=code)


def classify_error(exc: BaseException, *, started: bool) -> ProviderError:
    """An exception from either transport → ProviderError. The SDK is only consulted
    when the exception came from it (its module is then already imported)."""
    if isinstance(exc, StatusError):
        return classify_status(exc.status, exc.body, exc.message, started=started)
    if isinstance(exc, StreamError):
        code, emsg = error_fields(exc.body)
        return ProviderError("stream_error", emsg or exc.message, code=code)
    sdk = sys.modules.get("openai")
    if sdk is not None:
        if isinstance(exc, sdk.APIStatusError):
            return classify_status(exc.status_code, exc.body, str(exc), started=started)
        if isinstance(exc, sdk.APIError) and not isinstance(exc, sdk.APIConnectionError):
            # an error chunk / `event: error` inside the stream
            code, emsg = error_fields(exc.body)
            return ProviderError("stream_error", emsg or exc.message or str(exc), code=code)
        if isinstance(exc, sdk.OpenAIError) and "credentials" in str(exc).lower():
            return ProviderError("authentication", str(exc))
    return classify_other(exc, started=started)


def network_errors() -> tuple[type[BaseException], ...]:
    """What the SDK maps to APITimeoutError / APIConnectionError while reading a body."""
    import ssl

    from sema_rpc.providers import transport

    ours: tuple[type[BaseException], ...] = (transport.RequestError, ssl.SSLError)
    # Only a module that is loaded can have raised its errors.
    if (anyio := sys.modules.get("anyio")) is not None:
        ours += (anyio.EndOfStream,)
    if (httpx2 := sys.modules.get("httpx2")) is None:
        return ours
    return (httpx2.TimeoutException, httpx2.RequestError, *ours)


def openai_request_parts(
    provider: SdkProvider, path: str, params: dict[str, Any]
) -> tuple[str, dict[str, str], bytes]:
    """(url, headers, body) as the OpenAI SDK builds them: the key as a bearer token
    (OPENAI_API_KEY without one), OPENAI_ORG_ID / OPENAI_PROJECT_ID as headers, base URL
    from the profile, else OPENAI_BASE_URL, else the API's."""
    base = provider.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    key = provider._api_key or os.environ.get("OPENAI_API_KEY")
    if key is None and provider.base_url:
        key = "sema-no-key"  # local and proxy servers often need none
    if key is None:
        raise ValueError(
            "The api_key client option must be set either by passing api_key to the client "
            "or by setting the OPENAI_API_KEY environment variable"
        )
    headers = {
        "accept": "application/json",
        "content-type": "application/json",
        "authorization": f"Bearer {key}",
    }
    org, project = os.environ.get("OPENAI_ORG_ID"), os.environ.get("OPENAI_PROJECT_ID")
    if org:
        headers["openai-organization"] = org
    if project:
        headers["openai-project"] = project
    params = {**params, "stream": True}
    body = json.dumps(params, separators=(",", ":")).encode()
    return base.rstrip("/") + path, headers, body

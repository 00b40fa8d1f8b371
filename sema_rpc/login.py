"""`sema-rpc login`, `sema-rpc logout`, `sema-rpc status`: model keys without editing files.

`login` is an interactive terminal flow (also what ACP editors start for the `login`
authentication method): pick a provider — Anthropic, OpenAI, or an OpenAI-compatible
endpoint (its base URL and model) — type the key (never echoed: `getpass`; from a pipe
it is read as one line), check it with one cheap request (`GET …/models`) when the
network allows, and store it in `$SEMA_ROOT/credentials.json` (0600, `core.credentials`).
A key the provider refuses (401/403) is not stored; a check that cannot be made (no
network, another status) is said plainly and the key is stored unchecked. The key never
reaches the screen, a log or an error message.

`status` says which provider has a key and where it comes from (the environment,
`credentials.json`), never the key; exit 1 when no model would be usable. `logout
[PROVIDER]` removes stored keys (all without PROVIDER); keys in the environment stay.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

from sema_rpc.core.config import ConfigError, resolve_model
from sema_rpc.core.credentials import (
    PROVIDERS,
    Credential,
    credentials_path,
    load_credentials,
    remove_credentials,
    save_credential,
)
from sema_rpc.core.secrets import redact

CHECK_TIMEOUT_S = 10.0
ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com"
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
ENV_KEYS = {
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "openai": ("OPENAI_API_KEY",),
}
ENV_URLS = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}

CHOICES = (
    ("anthropic", "Anthropic (Claude)"),
    ("openai", "OpenAI"),
    ("compatible", "An OpenAI-compatible endpoint (a base URL and its key)"),
)


@dataclass(frozen=True)
class CheckResult:
    ok: bool | None
    """True: the key works; False: the provider refused it; None: not checked."""
    message: str


def _models_url(provider: str, base_url: str | None) -> str:
    if provider == "anthropic":
        return (base_url or ANTHROPIC_DEFAULT_URL).rstrip("/") + "/v1/models?limit=1"
    return (base_url or OPENAI_DEFAULT_URL).rstrip("/") + "/models"


def check_key(provider: str, api_key: str, base_url: str | None) -> CheckResult:
    """One cheap authenticated request: list the models (nothing is generated or billed)."""
    url = _models_url(provider, base_url)
    headers = {"user-agent": "sema-rpc-login"}
    if provider == "anthropic":
        headers |= {"x-api-key": api_key, "anthropic-version": "2023-06-01"}
    else:
        headers["authorization"] = f"Bearer {api_key}"
    host = urlsplit(url).netloc or url
    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=CHECK_TIMEOUT_S) as response:
            response.read(1 << 20)
            return CheckResult(True, f"The key works: {host} accepted it.")
    except urllib.error.HTTPError as exc:
        detail = _error_detail(exc)
        if exc.code in (401, 403):
            return CheckResult(False, f"{host} refused this key (HTTP {exc.code}{detail}).")
        return CheckResult(
            None, f"Could not check the key: {host} answered HTTP {exc.code}{detail}."
        )
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return CheckResult(None, f"Could not check the key: cannot reach {host} ({reason}).")


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read(65536) or b"{}")
        message = body.get("error", {}).get("message") if isinstance(body, dict) else None
    except (ValueError, OSError, AttributeError):
        message = None
    return f": {redact(str(message))[:200]}" if message else ""


# --------------------------------------------------------------------------- prompts


class _Terminal:
    """Questions on the terminal. The key is read with `getpass` (no echo) when stdin is
    a terminal, else as one line from stdin (a pipe: nothing is echoed either)."""

    def __init__(self, out: TextIO):
        self.out = out

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def ask(self, prompt: str) -> str:
        self.out.write(prompt)
        self.out.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line.strip()

    def secret(self, prompt: str) -> str:
        if sys.stdin.isatty():
            import getpass

            return getpass.getpass(prompt).strip()
        self.out.write(prompt)
        self.out.flush()
        line = sys.stdin.readline()
        self.out.write("\n")
        if not line:
            raise EOFError
        return line.strip()


def _pick_provider(term: _Terminal) -> str:
    term.say("Which model provider?")
    for i, (_, label) in enumerate(CHOICES, 1):
        term.say(f"  {i}) {label}")
    while True:
        answer = term.ask(f"Choose 1-{len(CHOICES)}: ").lower()
        for i, (name, _) in enumerate(CHOICES, 1):
            if answer in (str(i), name):
                return name
        term.say(f"Please answer a number from 1 to {len(CHOICES)}.")


def login_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sema-rpc login",
        description="Store a model provider's API key in $SEMA_ROOT/credentials.json (0600). "
        "Keys in the environment still win over it.",
    )
    parser.add_argument(
        "--provider",
        choices=[name for name, _ in CHOICES],
        help="skip the question (compatible: an OpenAI-compatible endpoint)",
    )
    parser.add_argument("--base-url", help="the endpoint's base URL (compatible endpoints)")
    parser.add_argument("--model", help="the model to use by default (compatible endpoints)")
    parser.add_argument("--no-check", action="store_true", help="store the key without checking it")
    args = parser.parse_args(argv)
    term = _Terminal(sys.stdout)
    try:
        return _login(term, args)
    except (EOFError, KeyboardInterrupt):
        term.say("\nCancelled: nothing was stored.")
        return 130


def _login(term: _Terminal, args: argparse.Namespace) -> int:
    choice = args.provider or _pick_provider(term)
    provider = "anthropic" if choice == "anthropic" else "openai"
    base_url: str | None = args.base_url
    model: str | None = args.model
    if choice == "compatible":
        while not base_url:
            base_url = term.ask("Base URL (e.g. http://localhost:8000/v1): ")
        if not base_url.startswith(("http://", "https://")):
            term.say(f"Not an http(s) URL: {base_url}. Nothing was stored.")
            return 2
        while not model:
            model = term.ask("Model id to use by default: ")
    label = dict(CHOICES)[choice]
    key = term.secret(f"API key for {label} (not shown as you type): ")
    if not key:
        term.say("No key entered: nothing was stored.")
        return 1
    if args.no_check:
        term.say("Not checked (--no-check).")
    else:
        term.say(f"Checking the key with {_models_url(provider, base_url).split('?')[0]} …")
        result = check_key(provider, key, base_url)
        term.say(result.message)
        if result.ok is False:
            term.say("Nothing was stored. Run `sema-rpc login` again with another key.")
            return 1
        if result.ok is None:
            term.say("Storing it unchecked: the first prompt will tell whether it works.")
    path = save_credential(Credential(provider, key, base_url, model))
    term.say(f"Stored the {provider} key in {path} (readable by you only).")
    shadow = [v for v in ENV_KEYS[provider] if os.environ.get(v)]
    if shadow:
        term.say(f"Note: {shadow[0]} is set in this environment and wins over the stored key.")
    return 0


# --------------------------------------------------------------------------- logout


def logout_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sema-rpc logout",
        description="Remove stored keys from $SEMA_ROOT/credentials.json (keys in the "
        "environment are not touched).",
    )
    parser.add_argument("provider", nargs="?", choices=PROVIDERS, help="default: all of them")
    args = parser.parse_args(argv)
    path = credentials_path()
    removed = remove_credentials([args.provider] if args.provider else [], path)
    if not removed:
        print(f"No stored key to remove in {path}.")
    for provider in removed:
        print(f"Removed the stored {provider} key from {path}.")
    for provider in removed:
        for var in ENV_KEYS[provider]:
            if os.environ.get(var):
                print(f"{var} is still set in this environment and is still used.")
    return 0


# --------------------------------------------------------------------------- status


def status_lines(root_path: Path | None = None) -> tuple[list[str], bool]:
    """What `sema-rpc status` prints, and whether a model is usable."""
    path = root_path or credentials_path()
    stored = load_credentials(path)
    lines: list[str] = []
    for provider in PROVIDERS:
        sources: list[str] = []
        env = [v for v in ENV_KEYS[provider] if os.environ.get(v)]
        if env:
            sources.append(f"the environment ({env[0]})")
        cred = stored.get(provider)
        if cred is not None:
            extra = []
            if cred.base_url:
                extra.append(f"base URL {cred.base_url}")
            if cred.model:
                extra.append(f"model {cred.model}")
            where = f"{path}" + (f" ({', '.join(extra)})" if extra else "")
            sources.append(where if not env else f"{where}, not used: the environment wins")
        state = "key from " + "; also ".join(sources) if sources else "no key"
        lines.append(f"{provider + ':':<11} {state}")
    try:
        profile = resolve_model(None)
    except ConfigError as exc:
        lines.append(f"default model: none ({exc.message})")
        return lines, False
    if profile is None:
        lines.append(
            "default model: none (run `sema-rpc login`, or set ANTHROPIC_API_KEY / OPENAI_API_KEY)"
        )
        return lines, False
    where = f" at {profile.base_url}" if profile.base_url else ""
    lines.append(f"default model: {profile.provider}/{profile.model_name}{where}")
    return lines, True


def status_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sema-rpc status",
        description="Which model provider has a key, and where it comes from (never the key). "
        "Exit 1 when no model is usable.",
    )
    parser.parse_args(argv)
    lines, usable = status_lines()
    for line in lines:
        print(line)
    return 0 if usable else 1


__all__ = [
    "check_key",
    "login_main",
    "logout_main",
    "status_lines",
    "status_main",
]

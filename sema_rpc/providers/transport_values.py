"""The light path's values (transport.py): timeouts, headers, the URL of a request, and
the proxies the environment names, read as httpx2's `trust_env` reads them."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from sema_rpc.providers.transport_errors import ConnectError


class Timeouts:
    """Seconds for each phase; None waits forever."""

    __slots__ = ("connect", "pool", "read", "write")

    def __init__(
        self,
        timeout: float | None,
        *,
        connect: float | None = None,
        read: float | None = None,
        write: float | None = None,
        pool: float | None = None,
    ) -> None:
        self.connect = timeout if connect is None else connect
        self.read = timeout if read is None else read
        self.write = timeout if write is None else write
        self.pool = timeout if pool is None else pool

    @classmethod
    def of(cls, value: Any) -> Timeouts:
        """A `Timeouts` from anything with connect/read/write/pool (an httpx2.Timeout)."""
        if isinstance(value, Timeouts):
            return value
        return cls(None, connect=value.connect, read=value.read, write=value.write, pool=value.pool)


class Headers:
    """Response headers: ordered (name, value) pairs, looked up case-insensitively."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[tuple[str, str]]) -> None:
        self._items = list(items)

    def get(self, name: str, default: Any = None) -> Any:
        name = name.lower()
        values = [v for k, v in self._items if k.lower() == name]
        return ", ".join(values) if values else default

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value  # type: ignore[no-any-return]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def items(self) -> list[tuple[str, str]]:
        return list(self._items)

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


class _Url:
    __slots__ = ("host", "port", "scheme", "target", "userinfo")

    def __init__(self, url: str) -> None:
        scheme, sep, rest = url.partition("://")
        if not sep or scheme.lower() not in ("http", "https"):
            raise ConnectError(f"unsupported URL: {url!r}")
        self.scheme = scheme.lower()
        cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
        authority, path = rest[:cut], rest[cut:]
        path = path.partition("#")[0]
        userinfo, _, authority = authority.rpartition("@")
        self.userinfo = userinfo
        if authority.startswith("["):
            host, _, port_text = authority[1:].partition("]")
            port_text = port_text.removeprefix(":")
        else:
            host, _, port_text = authority.partition(":")
        self.host = host.lower()
        try:
            self.port = int(port_text) if port_text else (443 if self.scheme == "https" else 80)
        except ValueError:
            raise ConnectError(f"invalid port in URL: {url!r}") from None
        if path.startswith("?"):
            path = "/" + path
        self.target = path or "/"

    @property
    def origin(self) -> tuple[str, str, int]:
        return self.scheme, self.host, self.port

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.scheme}://{self.authority}{self.target}"

    def proxy_authorization(self) -> list[tuple[str, str]]:
        """A proxy URL's `user:password@` as the Basic credentials httpx2 sends it."""
        if not self.userinfo:
            return []
        import base64
        from urllib.parse import unquote

        user, _, password = self.userinfo.partition(":")
        token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
        return [("Proxy-Authorization", f"Basic {token}")]

    def join(self, location: str) -> str:
        """`location` (a redirect's) resolved against this URL."""
        if "://" in location.split("?", 1)[0]:
            return location
        if location.startswith("//"):
            return f"{self.scheme}:{location}"
        if location.startswith("/"):
            return f"{self.scheme}://{self.authority}{location}"
        base = self.target.split("?", 1)[0]
        return f"{self.scheme}://{self.authority}{base.rsplit('/', 1)[0]}/{location}"


# ------------------------------------------------------------------------ proxies


def environment_proxies(env: dict[str, str] | None = None) -> dict[str, Any]:
    """{"http": url, "https": url, "all": url, "no": [rules]} from the environment, read
    as httpx2 reads it (urllib's `getproxies()`: a lower-case name wins over its upper
    case; `HTTP_PROXY` is ignored under CGI, when `REQUEST_METHOD` is set)."""
    env = dict(os.environ) if env is None else env
    found: dict[str, str] = {}
    for name, value in env.items():  # upper case first, lower case overrides
        if name.lower().endswith("_proxy") and name != name.lower() and value:
            found[name[:-6].lower()] = value
    for name, value in env.items():
        if name.endswith("_proxy") and name == name.lower():
            if value:
                found[name[:-6]] = value
            else:
                found.pop(name[:-6], None)
    if "REQUEST_METHOD" in env:
        found.pop("http", None)
    out: dict[str, Any] = {}
    for scheme in ("http", "https", "all"):
        if proxy := found.get(scheme):
            out[scheme] = proxy if "://" in proxy else f"http://{proxy}"
    out["no"] = [h.strip().lower() for h in found.get("no", "").split(",") if h.strip()]
    return out


def _bypasses(rules: list[str], url: _Url) -> bool:
    """Whether NO_PROXY `rules` send `url` direct (httpx2's matching: `*` everything;
    `host`/`domain` that host and its subdomains; `.domain` subdomains only; an
    optional `:port` limits a rule to that port; `scheme://host` that scheme)."""
    for rule in rules:
        if rule == "*":
            return True
        scheme = None
        if "://" in rule:
            scheme, _, rule = rule.partition("://")
        if rule.startswith("["):
            host, _, port_text = rule[1:].partition("]")
            port_text = port_text.removeprefix(":")
        elif rule.count(":") == 1:
            host, _, port_text = rule.partition(":")
        else:
            host, port_text = rule, ""
        host = host.split("/", 1)[0]  # a CIDR suffix: httpx2 matches the address alone
        if scheme is not None and scheme not in ("all", url.scheme):
            continue
        if port_text and port_text != str(url.port):
            continue
        if host.startswith("*."):
            host = "." + host[2:]
        elif host.startswith("*"):
            host = host[1:]
        if host.startswith("."):
            if url.host.endswith(host) and url.host != host[1:]:
                return True
        elif url.host == host or (not _is_ip(host) and url.host.endswith("." + host)):
            return True
    return False


def _is_ip(host: str) -> bool:
    return ":" in host or host.replace(".", "").isdigit()

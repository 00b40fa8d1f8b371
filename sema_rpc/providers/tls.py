"""The light path's TLS context: the verification `httpcore2.default_ssl_context()` sets
up (what the SDKs' clients use), with its trust store loaded when the first TLS
connection needs it instead of when the client is built.

Loading the CA store costs tens of milliseconds of CPU; a client that only ever talks
plain http (a local model server) never pays it, and one that talks https pays it once,
before its first handshake (or ahead, in the warm-up, with `load_trust()`). A redirect or
a proxy tunnel to https uses the same context, so it is verified the same way: no TLS
handshake can start before the trust store is in.

The choice of trust store follows `httpcore2.default_ssl_context()` exactly (a test
compares the two contexts): `SSL_CERT_FILE`, else `SSL_CERT_DIR` (both read when the
context is made, `SSLKEYLOGFILE` honoured as `ssl.create_default_context` does), else
OpenSSL's compiled-in CA file / directory, else the first CA bundle found at the usual
Linux places. On macOS and Windows the platform verifier (`truststore`) is used as built
by httpcore2: it loads no CA store up front, so there is nothing to defer.
"""

from __future__ import annotations

import os
import re
import ssl
import sys
import threading
from typing import Any

__all__ = ["LazyTrustContext", "client_ssl_context"]

CA_FILE_CANDIDATES = (
    "/etc/ssl/cert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/pki/tls/cert.pem",
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/ssl/ca-bundle.pem",
)
"""httpcore2's fallbacks when OpenSSL's compiled-in paths are unusable (the same list)."""


def _trust_locations() -> tuple[str | None, str | None, bool]:
    """(cafile, capath, from_env) as `httpcore2.default_ssl_context()` chooses them on
    Linux and other non-macOS, non-Windows systems."""
    if cafile := os.environ.get("SSL_CERT_FILE"):
        return cafile, None, True
    if capath := os.environ.get("SSL_CERT_DIR"):
        return None, capath, True
    paths = ssl.get_default_verify_paths()
    found_file = paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None
    found_dir = paths.openssl_capath if os.path.isdir(paths.openssl_capath) else None
    if found_dir and not found_file:
        if not any(re.fullmatch(r"[0-9a-fA-F]{8}\.\d", f) for f in os.listdir(found_dir)):
            found_dir = None
    if not found_file and not found_dir:
        found_file = next(filter(os.path.isfile, CA_FILE_CANDIDATES), None)
    return found_file, found_dir, False


class LazyTrustContext(ssl.SSLContext):
    """A client context (`PROTOCOL_TLS_CLIENT`: certificate and host name checked) that
    loads its trust store before the first TLS object is made from it (`wrap_bio`,
    `wrap_socket`) or the store is read (`get_ca_certs`, `cert_store_stats`). Thread-safe:
    anyio calls `wrap_bio` of a context that is not a plain `ssl.SSLContext` in a worker
    thread, so an https client loads the store there, off the event loop."""

    _cafile: str | None
    _capath: str | None
    _trust_lock: threading.Lock
    _trusted: bool

    def __new__(cls, *args: Any, **kwargs: Any) -> LazyTrustContext:
        return super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)

    def __init__(self, cafile: str | None = None, capath: str | None = None) -> None:
        self._cafile = cafile
        self._capath = capath
        self._trust_lock = threading.Lock()
        self._trusted = not (cafile or capath)

    @classmethod
    def default(cls) -> LazyTrustContext:
        """The context `httpcore2.default_ssl_context()` would build, trust deferred."""
        cafile, capath, from_env = _trust_locations()
        ctx = cls(cafile, capath)
        if from_env:  # built with ssl.create_default_context(), which honours this
            keylog = os.environ.get("SSLKEYLOGFILE")
            if keylog and not sys.flags.ignore_environment:
                ctx.keylog_filename = keylog
        return ctx

    @property
    def trust_loaded(self) -> bool:
        return self._trusted

    def load_trust(self) -> None:
        """Load the trust store now (once; later calls return at once)."""
        if self._trusted:
            return
        with self._trust_lock:
            if self._trusted:
                return
            self.load_verify_locations(self._cafile, self._capath)
            self._trusted = True

    def wrap_bio(self, *args: Any, **kwargs: Any) -> Any:
        self.load_trust()
        return super().wrap_bio(*args, **kwargs)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> Any:
        self.load_trust()
        return super().wrap_socket(*args, **kwargs)

    def get_ca_certs(self, binary_form: bool = False) -> Any:
        self.load_trust()
        return super().get_ca_certs(binary_form)

    def cert_store_stats(self) -> dict[str, int]:
        self.load_trust()
        return super().cert_store_stats()


def client_ssl_context() -> ssl.SSLContext:
    """The light path's client context: a `LazyTrustContext` on Linux and the like, the
    platform verifier's context (built as httpcore2 builds it) on macOS and Windows."""
    if sys.platform in ("win32", "darwin"):  # platform.system() Windows, Darwin
        import httpcore2

        return httpcore2.default_ssl_context()
    return LazyTrustContext.default()

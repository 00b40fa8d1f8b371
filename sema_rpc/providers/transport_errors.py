"""The light path's transport errors (transport.py), named and nested as httpx2's so that
`http.py` and the providers classify both alike: `RequestError` ⊃ `TransportError` ⊃
`TimeoutException` ⊃ `ConnectTimeout`/`ReadTimeout`/`WriteTimeout`/`PoolTimeout`;
`NetworkError` ⊃ `ConnectError`/`ReadError`/`WriteError`; `RemoteProtocolError`,
`ProxyError`; beside `TransportError`: `DecodingError`, `TooManyRedirects`."""

from __future__ import annotations


class RequestError(Exception):
    """The request failed (httpx2's `RequestError`): a transport error, a body that does
    not decode, too many redirects."""


class TransportError(RequestError):
    """No (complete) response: the connection failed, timed out or broke the protocol."""


class TimeoutException(TransportError):
    pass


class ConnectTimeout(TimeoutException):
    pass


class ReadTimeout(TimeoutException):
    pass


class WriteTimeout(TimeoutException):
    pass


class PoolTimeout(TimeoutException):
    pass


class NetworkError(TransportError):
    pass


class ConnectError(NetworkError):
    pass


class ReadError(NetworkError):
    pass


class WriteError(NetworkError):
    pass


class RemoteProtocolError(TransportError):
    pass


class ProxyError(TransportError):
    pass


class TooManyRedirects(RequestError):
    pass


class DecodingError(RequestError):
    """A gzip or deflate body that does not decode."""

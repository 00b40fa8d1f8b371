"""Generate the Python client's typed calls (clients/python/sema_client/_methods.py) from
sema_rpc/protocol.py's METHODS: one async method per method, typed params and result.

python -m sema_rpc.client_gen          # rewrite _methods.py
python -m sema_rpc.client_gen --check  # exit 1 when it is out of date
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import sema_rpc.protocol as protocol
from sema_rpc.protocol import METHODS, MethodSpec

METHODS_FILE = (
    Path(__file__).resolve().parent.parent / "clients" / "python" / "sema_client" / "_methods.py"
)

_HEADER = '''"""Typed calls, one per method of the protocol: `await client.rpc.session_create(params)`.

Generated from sema_rpc/protocol.py (METHODS) by `make generate`
(python -m sema_rpc.client_gen); do not edit by hand.

Each call takes its params as the protocol model or as a dict (snake_case or camelCase;
validated here, and keys this version does not know are sent as given, for newer
servers) and returns the result as the protocol model. Errors are those of
`SemaClient.request()`: `SemaRpcError` for an error answer, `SemaConnectionError` when
the server goes away; `timeout=` or cancelling the caller sends `$/cancelRequest`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import sema_rpc.protocol as protocol
from sema_client._models import to_camel

# The models are read from `protocol` when a call is made: a model's module is loaded on
# first use (sema_rpc/protocol.py), so this module creates none of them.
if TYPE_CHECKING:
    from sema_rpc.protocol import (
{imports}
        WireModel,
    )

__all__ = ["Methods", "Requester"]


class Requester(Protocol):
    """What the typed calls need of a client (`SemaClient` is one); a protocol, so that
    this module and the client do not import each other."""

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> Any: ...

    async def notify(self, method: str, params: Any = None) -> None: ...


def _wire(model: type[WireModel], params: WireModel | Mapping[str, Any] | None) -> Any:
    if params is None:
        return None
    if not isinstance(params, Mapping):  # a protocol model
        return params.wire()
    given = {{(to_camel(k) if "_" in k else k): v for k, v in params.items()}}
    known = model.model_validate(given).model_dump(mode="json", by_alias=True, exclude_unset=True)
    return {{**given, **known}}


class Methods:
    """`client.rpc`: the protocol's methods as typed calls."""

    def __init__(self, client: Requester):
        self._client = client
'''


def method_name(wire_name: str) -> str:
    """`session/create` → `session_create`, `permissionMode/update` → `permission_mode_update`."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", wire_name).lower()
    return re.sub(r"[^a-z0-9]+", "_", snake).strip("_")


def _optional(spec: MethodSpec) -> bool:
    return all(not f.is_required() for f in spec.params.model_fields.values())


def _render_method(spec: MethodSpec) -> str:
    params_type = spec.params.__name__
    param = (
        f"params: {params_type} | Mapping[str, Any] | None = None"
        if _optional(spec)
        else f"params: {params_type} | Mapping[str, Any]"
    )
    name = method_name(spec.name)
    doc = f'        """`{spec.name}`: {spec.doc}"""\n'
    if spec.notification:
        return (
            f"\n    async def {name}(self, {param}) -> None:\n"
            + doc
            + f'        await self._client.notify("{spec.name}", _wire(protocol.{params_type}, params))\n'
        )
    assert spec.result is not None, spec.name
    result_type = spec.result.__name__
    return (
        f"\n    async def {name}(\n"
        f"        self,\n"
        f"        {param},\n"
        f"        *,\n"
        f"        timeout: float | None = None,\n"
        f"        msg_id: int | str | None = None,\n"
        f"    ) -> {result_type}:\n" + doc + "        result = await self._client.request(\n"
        f'            "{spec.name}",\n'
        f"            _wire(protocol.{params_type}, params),\n"
        "            timeout=timeout,\n"
        "            msg_id=msg_id,\n"
        "        )\n"
        f"        return protocol.{result_type}.model_validate(result)\n"
    )


def render() -> str:
    names = sorted(
        {spec.params.__name__ for spec in METHODS.values()}
        | {spec.result.__name__ for spec in METHODS.values() if spec.result is not None},
        key=lambda n: (n.lower(), n),  # the order ruff's import sorting keeps
    )
    for spec in METHODS.values():
        for model in (spec.params, spec.result):
            if model is not None and getattr(protocol, model.__name__, None) is not model:
                raise ValueError(f"{model.__name__} is not exported by sema_rpc.protocol")
    imports = "\n".join(f"        {n}," for n in names)
    out = _HEADER.format(imports=imports)
    for spec in METHODS.values():
        out += _render_method(spec)
    return out


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if METHODS_FILE.read_text(encoding="utf-8") != text:
            print(f"{METHODS_FILE} is out of date: run `make generate`", file=sys.stderr)
            return 1
        return 0
    METHODS_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {METHODS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

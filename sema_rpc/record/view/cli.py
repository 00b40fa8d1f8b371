"""`sema-rpc view SOURCE [-o FILE]`."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from pathlib import Path

from sema_rpc.record.view.model import ViewError
from sema_rpc.record.view.page import render
from sema_rpc.record.view.source import load, resolve_input


def _register_profile_keys() -> None:
    """The keys of models.json's profiles are secrets too (as in the server's logs)."""
    from sema_rpc.core.config import load_models

    with contextlib.suppress(Exception):  # a broken models.json must not stop the page
        load_models()


def view_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sema-rpc view",
        description="Render a recording (--record) or a session history as one self-contained HTML page.",
    )
    parser.add_argument(
        "source", help="a recording (run folder or wire.jsonl), a history file, or a session id"
    )
    parser.add_argument(
        "-o", "--output", default=None, help="the HTML file to write (default: <session>.html here)"
    )
    args = parser.parse_args(argv)
    try:
        path = resolve_input(args.source)
        view = load(path)
    except ViewError as exc:
        print(f"sema-rpc view: {exc}", file=sys.stderr)
        return 2
    _register_profile_keys()
    output = args.output
    if output is None:
        name = next(iter(view.sessions), None) or path.stem
        output = re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".html"
    target = Path(output)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        # 0600 like the history it shows: the page holds the whole conversation
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "w", encoding="utf-8", buffering=1 << 20) as out:
            render(view, out)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        print(f"sema-rpc view: cannot write {output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"wrote {target}", file=sys.stderr)
    return 0

"""`sema-rpc view SOURCE [-o FILE]`."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
from pathlib import Path

from sema_rpc.core.files import replacing_private
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
    try:
        # 0600 like the history it shows: the page holds the whole conversation
        with (
            replacing_private(target, make_dir=False) as raw,
            io.TextIOWrapper(raw, encoding="utf-8", write_through=True) as out,
        ):
            render(view, out)
    except OSError as exc:
        print(f"sema-rpc view: cannot write {output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"wrote {target}", file=sys.stderr)
    return 0

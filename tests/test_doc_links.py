"""The project's Markdown documents link only to files and headings that exist.

A merge that drops a section (or renames a heading) leaves links to it pointing nowhere;
this names each one. Anchors are GitHub's: the heading lowercased, punctuation other
than `-` and `_` dropped, spaces turned into `-`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [
    "README.md",
    "CONTRIBUTING.md",
    "CHANGELOG.md",
    "protocol/README.md",
    "protocol/acp.md",
    "bench/README.md",
    "clients/python/README.md",
    "clients/neovim/README.md",
    "clients/vscode/README.md",
]
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.M)
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(markdown: str) -> set[str]:
    found = set()
    for heading in _HEADING.findall(_FENCE.sub("", markdown)):
        slug = re.sub(r"[^\w\- ]", "", heading.lower())
        found.add(slug.replace(" ", "-"))
    return found


def test_anchor_slugs_follow_github():
    text = "## Methods (client → server)\n### `session/rewind`\n### Models (`models.json`)\n"
    assert anchors(text) == {"methods-client--server", "sessionrewind", "models-modelsjson"}


@pytest.mark.parametrize("doc", DOCS)
def test_links_resolve(doc: str):
    path = REPO / doc
    text = path.read_text(encoding="utf-8")
    broken = []
    for target in _LINK.findall(_FENCE.sub("", text)):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, fragment = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md":
            if fragment not in anchors(linked.read_text(encoding="utf-8")):
                broken.append(f"{target}: no such heading")
    assert not broken, f"{doc} has broken links:\n  " + "\n  ".join(broken)

"""The ACP Registry entry kept in `registry/sema-rpc/`: valid against the registry's
`agent.schema.json` (a copy in `registry/`, equal to the shared reference where that is
present), and consistent with the package it launches (name, version, license), with an
icon the registry accepts (16x16, square, monochrome through `currentColor`).

That the entry really starts an agent is tests/dist/test_install.py's part (it launches
the entry against the locally built wheel, as the registry's verification does)."""

from __future__ import annotations

import json
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema

REPO = Path(__file__).resolve().parents[1]
ENTRY_DIR = REPO / "registry" / "sema-rpc"


def _entry() -> dict:
    return json.loads((ENTRY_DIR / "agent.json").read_text())


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_the_entry_is_valid_against_the_registry_schema() -> None:
    schema = json.loads((REPO / "registry" / "agent.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.validate(_entry(), schema)
    broken = {**_entry(), "distribution": {"uvx": {"args": ["--acp"]}}}  # no package
    assert list(jsonschema.Draft7Validator(schema).iter_errors(broken))


def test_the_schema_copy_matches_the_shared_one() -> None:
    from tests.support.shared_data import shared_dir

    copy = (REPO / "registry" / "agent.schema.json").read_bytes()
    assert json.loads(copy)["title"] == "ACP Agent"
    shared = shared_dir() / "acp" / "registry" / "agent.schema.json"
    if shared.is_file():
        assert copy == shared.read_bytes()


def test_the_entry_launches_this_package_at_its_version() -> None:
    entry, project = _entry(), _project()
    assert entry["id"] == ENTRY_DIR.name
    assert entry["version"] == project["version"]
    assert entry["license"] == project["license"]
    uvx = entry["distribution"]["uvx"]
    assert uvx["package"] == f"{project['name']}=={project['version']}"
    assert uvx["args"] == ["--acp"]
    assert "sema-rpc" in project["scripts"]  # what `uvx sema-rpc` runs


def test_the_icon_is_what_the_registry_accepts() -> None:
    text = (ENTRY_DIR / "icon.svg").read_text()
    assert "<!--" not in text
    root = ET.fromstring(text)
    assert root.tag.rsplit("}", 1)[-1] == "svg"
    assert (root.get("width"), root.get("height")) == ("16", "16")
    assert root.get("viewBox") == "0 0 16 16"
    paints = [
        value.strip().lower()
        for elem in root.iter()
        for value in (elem.get("fill"), elem.get("stroke"))
        if value is not None
    ]
    assert "currentcolor" in paints
    assert set(paints) <= {"currentcolor", "none", "inherit"}
    assert not re.search(r"#[0-9a-fA-F]{3,8}\b|rgb\(", text)

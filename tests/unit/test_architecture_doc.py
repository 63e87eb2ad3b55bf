"""docs/architecture.md says what the code does, and is held to it: its layer rows are the
import-linter contract's layers, its allowed upward imports the contract's `ignore_imports`, its
store key table the keys `service/records.py` builds (every `*_key` function's key matches one
row, and every row is some function's), and every source path it names exists. A refactor that
changes any of these fails here until the page says so too."""

from __future__ import annotations

import inspect
import re
import tomllib
import typing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from taskgate.domain.models import Status
from taskgate.service import records

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"


def _section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def _contract() -> dict[str, Any]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["id"] == "layers"]
    return dict(layers)


def _row(layer: str) -> str:
    return " | ".join(part.strip() for part in layer.split("|"))


def test_the_layer_rows_are_the_contracts_layers() -> None:
    block = _section("Layers and imports").split("```")[1]
    rows = [re.split(r"\s{2,}", line.strip())[0] for line in block.strip().splitlines()]
    assert [_row(r) for r in rows] == [_row(layer) for layer in _contract()["layers"]]


def test_the_upward_imports_named_are_the_contracts_exceptions() -> None:
    named = set(re.findall(r"`(taskgate\.[\w.]+ -> taskgate\.[\w.]+)`", _section("Layers and imports")))
    assert named == set(_contract()["ignore_imports"])


# -- the store's keys --------------------------------------------------------------------------

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
# What each parameter of a key function is given, by name, else by type.
BY_NAME: dict[str, Any] = {"task_id": "demo-7", "project": "demo", "kind": "SPEC", "status": Status.READY}
BY_TYPE: dict[Any, Any] = {str: "x1", int: 7, datetime: AT, Status: Status.READY}


def _key_functions() -> dict[str, Any]:
    return {
        name: fn
        for name, fn in inspect.getmembers(records, inspect.isfunction)
        if fn.__module__ == records.__name__ and name.endswith("_key")
    }


def _built(name: str, fn: Any) -> tuple[str, str]:
    hints = typing.get_type_hints(fn)
    args = {}
    for param in inspect.signature(fn).parameters:
        if param in BY_NAME:
            args[param] = BY_NAME[param]
        else:
            assert hints[param] in BY_TYPE, f"records.{name}: give BY_TYPE a sample {hints[param]}"
            args[param] = BY_TYPE[hints[param]]
    built = fn(**args)
    assert isinstance(built, tuple) and len(built) == 2, f"records.{name} builds no (PK, SK)"
    return built


def _pattern(cell: str) -> re.Pattern[str]:
    """A table cell's key shape: literal text; `<name:0N>` a number of N digits; any other
    `<...>` one part, without `#`."""
    out = ""
    for part in re.split(r"(<[^>]+>)", cell):
        digits = re.fullmatch(r"<[^>:]+:0(\d+)>", part)
        if digits:
            out += rf"\d{{{digits[1]}}}"
        elif part.startswith("<"):
            out += "[^#]+"
        else:
            out += re.escape(part)
    return re.compile(out)


def _table() -> list[tuple[str, str, re.Pattern[str], re.Pattern[str]]]:
    section = _section("The store")
    lines = section[section.index("| PK | SK | holds |") :].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        pk, sk = (re.fullmatch(r"`([^`]+)`", c) for c in cells[:2])
        assert pk and sk, f"one key shape per cell, in backticks: {line}"
        rows.append((pk[1], sk[1], _pattern(pk[1]), _pattern(sk[1])))
    return rows


def test_the_key_table_is_the_keys_the_code_builds() -> None:
    table = _table()
    assert len(table) > 15
    shown: set[tuple[str, str]] = set()
    for name, fn in _key_functions().items():
        pk, sk = _built(name, fn)
        rows = [(p, s) for p, s, pkp, skp in table if pkp.fullmatch(pk) and skp.fullmatch(sk)]
        assert len(rows) == 1, f"records.{name} builds ({pk!r}, {sk!r}): matching rows {rows}"
        shown |= set(rows)
    unbuilt = {(p, s) for p, s, _, _ in table} - shown
    assert not unbuilt, f"rows no records.*_key function builds: {sorted(unbuilt)}"


@pytest.mark.parametrize(
    ("cell", "key", "matches"),
    [
        ("SPEC#<n:08>", "SPEC#00000007", True),
        ("H#<seq:08>", "H#2026-01-01T00:00:00Z#0001", False),
        ("SPEC#<n:08>", "SPEC#7", False),
        ("H#<seq:08>", "H#00000007", True),
        ("REQ#<actor>#<request id>", "REQ#agent:a#req-1", True),
        ("REQ#<actor>#<request id>", "REQ#agent:a", False),
        ("<project>", "demo", True),
        ("PROJECT", "PROJECTS", False),
    ],
)
def test_a_cell_matches_its_keys_only(cell: str, key: str, matches: bool) -> None:
    assert bool(_pattern(cell).fullmatch(key)) is matches


def test_the_index_partitions_named_are_the_ones_built() -> None:
    section = _section("The store")
    queue = records.queue_pk("demo", Status.READY)
    lookup = records.key_hash_pk("abc")
    assert "`Q#<status>#<project>`" in section and _pattern("Q#<status>#<project>").fullmatch(queue)
    assert "`KH#<key hash>`" in section and _pattern("KH#<key hash>").fullmatch(lookup)


def test_every_source_path_named_exists() -> None:
    text = DOC.read_text()
    missing = []
    for path in sorted(set(re.findall(r"`((?:[\w.*-]+/)+[\w.*-]+\.py)`", text))):
        here = [base for base in (ROOT, ROOT / "src" / "taskgate") if list(base.glob(path))]
        if not here:
            missing.append(path)
    assert not missing, f"docs/architecture.md names files that are not there: {missing}"

"""A full commit id is spelled once (domain/commit_ids.py: the pattern string, the compiled
pattern, and `Sha`, the type of every model field that holds one): no module restates the
pattern, and every model field that accepts exactly the full ids does so through that string."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

import taskgate
from taskgate.domain import commit_ids
from taskgate.domain.commit_ids import FULL_COMMIT, FULL_COMMIT_PATTERN, Sha

SRC = Path(taskgate.__file__).parent
# Sites still spelling it themselves, for a later change; each must still hold a spelling (so
# fixing one fails here until it leaves this list).
LEFT_FOR_LATER = {Path("domain/run_report.py")}
SHA1, SHA256 = "a" * 40, "0123456789abcdef" * 4


@pytest.mark.parametrize("good", [SHA1, SHA256])
def test_sha_takes_a_full_id(good: str) -> None:
    assert TypeAdapter(Sha).validate_python(good) == good
    assert commit_ids.is_full(good) and FULL_COMMIT.fullmatch(good)


@pytest.mark.parametrize(
    "bad", ["a" * 39, "a" * 41, "a" * 63, "a" * 65, "A" * 40, "g" * 40, SHA1 + "\n", " " + SHA1, "abc1234"]
)
def test_sha_refuses_anything_else(bad: str) -> None:
    with pytest.raises(ValidationError):
        TypeAdapter(Sha).validate_python(bad)
    assert not commit_ids.is_full(bad)


def _spells_it(text: str) -> bool:
    return "{40}" in text or ("{64}" in text and "{40}" in text)


def test_no_module_restates_the_pattern() -> None:
    found, left = [], set()
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC)
        if relative == Path("domain/commit_ids.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "{40}" in node.value:
                if relative in LEFT_FOR_LATER:
                    left.add(relative)
                else:
                    found.append(f"{relative}:{node.lineno}: {node.value!r}")
    assert not found, "use domain/commit_ids.Sha (or FULL_COMMIT_PATTERN):\n" + "\n".join(found)
    assert left == LEFT_FOR_LATER, f"{LEFT_FOR_LATER - left} no longer spells it: take it off the list"


def _models() -> list[type[BaseModel]]:
    for info in pkgutil.walk_packages(taskgate.__path__, "taskgate."):
        if info.name.startswith(("taskgate.cloud", "taskgate.cli.__main__", "taskgate.__main__")):
            continue  # cloud entry points read their settings at import
        importlib.import_module(info.name)
    seen: list[type[BaseModel]] = []
    todo = list(BaseModel.__subclasses__())
    while todo:
        model = todo.pop()
        todo.extend(model.__subclasses__())
        if model.__module__.startswith("taskgate.") and model not in seen:
            seen.append(model)
    return seen


def _patterns(schema: object) -> list[str]:
    """The patterns a field's own schema holds (a model inside it is checked as a model)."""
    if isinstance(schema, dict):
        own = [schema["pattern"]] if isinstance(schema.get("pattern"), str) else []
        return own + [p for key, value in schema.items() if key != "$defs" for p in _patterns(value)]
    if isinstance(schema, list):
        return [p for value in schema for p in _patterns(value)]
    return []


def test_every_field_of_full_ids_uses_the_one_pattern() -> None:
    models = _models()
    assert len(models) > 50
    full_only, typed = [], 0
    for model in models:
        properties = model.model_json_schema(mode="validation").get("properties", {})
        for name, schema in properties.items():
            for pattern in _patterns(schema):
                if pattern == FULL_COMMIT_PATTERN:
                    typed += 1
                    continue
                accepts = re.compile(pattern).search
                full = accepts(SHA1) and accepts(SHA256) and not accepts("a" * 39)
                if full and model.__module__ != "taskgate.domain.run_report":  # left for later, as above
                    full_only.append(f"{model.__module__}.{model.__qualname__}.{name}: {pattern}")
    assert not full_only, "declare these as domain/commit_ids.Sha:\n" + "\n".join(full_only)
    assert typed >= 15  # the Sha fields found (merging, batches, baseline, models, api, mcp)

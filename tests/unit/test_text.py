"""One check for text that is not valid Unicode, on every input model of both interfaces."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from taskgate.api import schemas
from taskgate.domain.text import unencodable
from taskgate.mcp.server import server

BAD = "lone \ud800 surrogate"


def _rest_bodies() -> list[type[BaseModel]]:
    return [
        m
        for m in vars(schemas).values()
        if isinstance(m, type) and issubclass(m, schemas.In) and m is not schemas.In
    ]


def _tool_arguments() -> dict[str, type[BaseModel]]:
    # The argument models the SDK validates each call with (its tool manager holds them).
    return {t.name: t.fn_metadata.arg_model for t in server._tool_manager.list_tools()}


def test_every_rest_body_and_every_tools_arguments_are_covered() -> None:
    assert len(_rest_bodies()) >= 15
    assert len(_tool_arguments()) == 25


@pytest.mark.parametrize("model", _rest_bodies(), ids=lambda m: m.__name__)
def test_every_rest_body_refuses_bad_text_anywhere(model: type[BaseModel]) -> None:
    for data in ({"title": BAD}, {"nested": {"deeper": [1, {"x": BAD}]}}, {BAD: "as a key"}):
        with pytest.raises(ValidationError) as caught:
            model.model_validate(data)
        assert caught.value.errors()[0]["type"] == "unencodable_text"


@pytest.mark.parametrize("name", sorted(_tool_arguments()))
def test_every_tools_arguments_refuse_bad_text_anywhere(name: str) -> None:
    model = _tool_arguments()[name]
    for data in ({"project": BAD}, {"criteria": [{"text": BAD}]}, {BAD: 1}):
        with pytest.raises(ValidationError) as caught:
            model.model_validate(data)
        assert caught.value.errors()[0]["type"] == "unencodable_text"


def test_unencodable_finds_the_first_bad_text_and_nothing_else() -> None:
    assert unencodable({"a": ["ok", {"b": BAD}]}) == "a[1].b"
    assert unencodable({"a": "😀 é \u0000 \uffff", "b": [1, 2.5, None, True]}) is None
    assert unencodable("\udfff") == "(text)"

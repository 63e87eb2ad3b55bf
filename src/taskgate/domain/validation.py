"""Pydantic's validation errors as a person reads them: where, what pydantic says, and for a
key the model does not know, which key it is and the nearest ones it does know ("unknown key
'check'; did you mean 'checks'?"). Only locations, messages and the model's own names: never the
input echoed back. The REST API's refusals and the CLI's checks before it asks both say it so."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel


def explain(error: Mapping[str, Any], model: type[BaseModel] | None, *, root: str | None = None) -> str:
    """One error's message. `model`: what was validated; `root`: the first part of the error's
    location that names the model itself (`body` for a REST body), if any."""
    msg = str(error.get("msg", error.get("type", "invalid")))
    loc = tuple(error.get("loc", ()))
    if root is not None:
        if not loc or loc[0] != root:
            model = None
        loc = loc[1:]
    if error.get("type") != "extra_forbidden" or not loc or not isinstance(loc[-1], str):
        return msg
    known = keys_at(model, loc[:-1]) if model is not None else None
    unknown = loc[-1][:80]
    if not known:
        return f"unknown key {unknown!r}"
    near = difflib.get_close_matches(unknown, known, n=3, cutoff=0.6)
    if near:
        return f"unknown key {unknown!r}; did you mean {' or '.join(repr(n) for n in near)}?"
    return f"unknown key {unknown!r}; the keys here are {', '.join(sorted(known))}"


def explained(
    errors: Sequence[Mapping[str, Any]],
    model: type[BaseModel] | None,
    *,
    root: str | None = None,
    limit: int = 10,
) -> str:
    """Errors as one line, `loc: message; ...` ("" for none)."""
    parts = []
    for e in errors[:limit]:
        loc = ".".join(str(p) for p in e.get("loc", ()))
        said = explain(e, model, root=root)
        parts.append(f"{loc}: {said}" if loc else said)
    more = f" (and {len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(parts) + more


def keys_at(model: type[BaseModel] | None, path: Sequence[Any]) -> list[str] | None:
    """The keys the model at `path` inside `model` accepts (following fields, list items and
    dict values), or None when the path leads to no model."""
    at: Any = model
    for part in path:
        at = _inner(at)
        if isinstance(at, type) and issubclass(at, BaseModel):
            field = at.model_fields.get(part) if isinstance(part, str) else None
            if field is None:
                field = next((f for f in at.model_fields.values() if f.alias == part), None)
            if field is None:
                return None
            at = field.annotation
        elif get_origin(at) in (list, tuple, set, frozenset, Sequence) and isinstance(part, int):
            at = next(iter(get_args(at)), None)
        elif get_origin(at) in (dict, Mapping) and len(get_args(at)) == 2:
            at = get_args(at)[1]
        else:
            return None
    at = _inner(at)
    if isinstance(at, type) and issubclass(at, BaseModel):
        return [f.alias or name for name, f in at.model_fields.items()]
    return None


def _inner(annotation: Any) -> Any:
    """`X | None` (and Optional[X], Annotated[X, ...]) is X: the model a key belongs to."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, UnionType):
            options = [a for a in get_args(annotation) if a is not type(None)]
            if len(options) != 1:
                return annotation
            annotation = options[0]
        else:
            return annotation

"""chain.canonical is RFC 8785: its fast path (the C json encoder) writes exactly rfc8785's bytes,
for every JSON value; values outside the fast path go to rfc8785 itself."""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from taskgate.domain import chain

# Every Unicode scalar value (no lone surrogates: the store refuses them before anything is
# hashed), keys included, with the characters whose escapes differ between encoders drawn often.
_text = st.text(
    st.one_of(
        st.characters(exclude_categories=("Cs",)),
        st.sampled_from(['"', "\\", "\x00", "\x1f", "\x7f", "\u2028", "\ue000", "\U0001f600", "\b"]),
    ),
    max_size=12,
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    _text,
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(_text, inner, max_size=5)),
    max_leaves=30,
)


@settings(max_examples=400)
@given(_json)
def test_canonical_is_rfc8785_for_every_json_value(value: Any) -> None:
    assert chain.canonical(value) == rfc8785.dumps(value)


@pytest.mark.parametrize(
    "value",
    [
        {"\ue000": 1, "\U0001f600": 2},  # UTF-16 order puts the emoji first, code points last
        {"n": 1.0, "m": 1e21, "k": -0.0},
        [2**53 - 1, -(2**53) + 1],
    ],
)
def test_the_values_where_the_encoders_differ_are_written_as_rfc8785_writes_them(value: Any) -> None:
    assert chain.canonical(value) == rfc8785.dumps(value)


def test_the_fast_path_is_taken_for_an_event_and_not_for_a_float() -> None:
    # Whether it is taken is what makes the hot path fast (bench/mcp_cpu.py); this pins the
    # predicate so a widening of it has to come with its own proof above.
    assert chain._plain({"seq": 3, "detail": {"ok": True, "list": ["a", None]}, "prev": "ab"})
    assert not chain._plain({"seconds": 1.5})
    assert not chain._plain({"é": 1})
    assert not chain._plain(2**53)

"""Full-text ranking (Okapi BM25) over a project's decisions, specs and tasks.

Hand-written on purpose: the corpus is one project's records, already loaded by the service,
and must rank the same on SQLite and DynamoDB (which has no full-text index); ~30 lines of
BM25 beat a dependency or a second search engine to deploy.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "with",
    ]
)
K1, B = 1.2, 0.75


def tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


# Texts remembered at once, and the longest remembered: a decision is a paragraph or two, and
# this bounds the memory to ~2,048 x (2,000 characters and their word counts), some MB at most.
_REMEMBERED = 2048
_REMEMBERED_CHARS = 2000


def _bag(text: str) -> tuple[int, Mapping[str, int]]:
    """A document's length in terms and how often each occurs. Remembered by text: every claim
    ranks all of its project's decisions for the brief, and splitting the same texts into
    words again was most of that. A pure
    function of the text, so nothing can go stale; read-only, so no caller can spoil it."""
    return _remembered_bag(text) if len(text) <= _REMEMBERED_CHARS else _split(text)


def _split(text: str) -> tuple[int, Mapping[str, int]]:
    counts = Counter(tokens(text))
    return sum(counts.values()), MappingProxyType(dict(counts))


_remembered_bag = functools.lru_cache(maxsize=_REMEMBERED)(_split)


@dataclass(frozen=True)
class Doc:
    id: str
    text: str


def rank(query: str, docs: Sequence[Doc], *, limit: int = 5) -> list[tuple[str, float]]:
    """Ids of the best-matching docs with their scores, best first; docs matching no term are left out."""
    terms = set(tokens(query))
    if not terms or not docs:
        return []
    lengths, bags = zip(*(_bag(d.text) for d in docs), strict=True)
    avg = (sum(lengths) / len(lengths)) or 1.0
    df = {t: sum(1 for bag in bags if t in bag) for t in terms}
    n = len(docs)
    scored = []
    for doc, bag, length in zip(docs, bags, lengths, strict=True):
        score = 0.0
        for t in terms:
            f = bag.get(t, 0)
            if f:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * length / avg))
        if score > 0:
            scored.append((doc.id, score))
    scored.sort(key=lambda s: (-s[1], s[0]))
    return scored[:limit]

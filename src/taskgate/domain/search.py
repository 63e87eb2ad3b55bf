"""Full-text ranking (Okapi BM25) over a project's decisions, specs and tasks.

Hand-written on purpose: the corpus is one project's records, already loaded by the service,
and must rank the same on SQLite and DynamoDB (which has no full-text index); ~30 lines of
BM25 beat a dependency or a second search engine to deploy.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Doc:
    id: str
    text: str


def rank(query: str, docs: Sequence[Doc], *, limit: int = 5) -> list[tuple[str, float]]:
    """Ids of the best-matching docs with their scores, best first; docs matching no term are left out."""
    terms = set(tokens(query))
    if not terms or not docs:
        return []
    bags = [Counter(tokens(d.text)) for d in docs]
    lengths = [sum(b.values()) for b in bags]
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

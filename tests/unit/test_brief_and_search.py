"""The brief stays under its budget, cutting the least relevant parts first; BM25 ranking."""

from __future__ import annotations

import json

from taskgate.domain import brief as briefs
from taskgate.domain.models import Attempt, AttemptEnding, Criterion, Note
from taskgate.domain.search import Doc, rank
from tests.support.briefs import T0, build_brief, make_decision, make_task


def test_a_small_brief_is_whole() -> None:
    b = build_brief(ranked_decisions=[make_decision(1, "use json")])
    assert b["omitted"] == {} and b["clipped"] == []
    assert b["decisions"] == [{"id": "DEC-1", "title": "decision 1", "body": "use json", "why": "search"}]
    assert "classname.name" in str(b["test_ref_rule"])


def test_a_huge_brief_fits_and_cuts_search_ranked_decisions_and_notes_first() -> None:
    linked = [make_decision(1, "spec decision " * 20, spec="SPEC-1")]
    ranked = [make_decision(i, "ranked words " * 60) for i in range(2, 7)]
    notes = [
        Note(id=f"n{i}", task_id="p-1", project="p", author="agent:a", body="note " * 100, at=T0)
        for i in range(10)
    ]
    attempts = [
        Attempt(
            number=i,
            actor="agent:a",
            credential_id="k",
            started_at=T0,
            ended_at=T0,
            ending=AttemptEnding.FAILED,
            used=True,
            findings=["broke " * 50],
        )
        for i in range(1, 4)
    ]
    b = build_brief(
        task=make_task(description="long " * 3000, attempts=attempts),
        linked_decisions=linked,
        ranked_decisions=ranked,
        notes=notes,
    )
    size = len(json.dumps(b, separators=(",", ":"), default=str))
    assert size <= briefs.TOKEN_BUDGET * briefs.CHARS_PER_TOKEN
    omitted = b["omitted"]
    assert isinstance(omitted, dict)
    assert omitted["search-ranked decisions"] == 5 and omitted["notes"] >= 1
    decisions = b["decisions"]
    assert isinstance(decisions, list)
    assert [d["id"] for d in decisions] == ["DEC-1"]  # the spec-linked decision survives
    prev = b["previous_attempts"]
    assert isinstance(prev, list) and prev and prev[-1]["attempt"] == 3  # the latest attempt survives


def test_bm25_ranks_relevant_docs_first_and_drops_non_matches() -> None:
    docs = [
        Doc("a", "use postgres for storage"),
        Doc("b", "health endpoint returns json status ok"),
        Doc("c", "health checks run every minute; health endpoint is public"),
        Doc("d", "unrelated"),
    ]
    ranked = rank("health endpoint", docs)
    assert [i for i, _ in ranked] == ["c", "b"]
    assert rank("the of and", docs) == []  # stop words only
    assert len(rank("health", docs, limit=1)) == 1


def _bm25(query: str, docs: list[Doc]) -> dict[str, float]:
    """Okapi BM25 written out again, straight from its definition: the oracle for rank()."""
    import math
    import re

    stop = {"a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it"}
    stop |= {"of", "on", "or", "that", "the", "this", "to", "with"}

    def words(text: str) -> list[str]:
        return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in stop]

    terms = set(words(query))
    split = {d.id: words(d.text) for d in docs}
    avg = sum(len(w) for w in split.values()) / len(docs) or 1.0
    out = {}
    for d in docs:
        score = 0.0
        for t in terms:
            f = split[d.id].count(t)
            df = sum(1 for w in split.values() if t in w)
            if f:
                idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                score += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * len(split[d.id]) / avg))
        if score > 0:
            out[d.id] = score
    return out


def test_rank_scores_as_bm25_defines_them_when_texts_repeat_across_calls() -> None:
    # The second and third calls find every text's words remembered from the first: the scores
    # must be the same as computed afresh, whatever the other documents are this time.
    texts = ["cache the health endpoint", "health health status", "storage in postgres", "ok"]
    long = "health " + "cache layer notes " * 150  # over the length remembered: split each time
    for extra in ([], ["health of the cache layer"], ["postgres health", "a cache of caches", long]):
        docs = [Doc(f"d{i}", t) for i, t in enumerate(texts + extra)]
        want = _bm25("health cache postgres", docs)
        got = dict(rank("health cache postgres", docs, limit=10))
        assert got.keys() == want.keys()
        for doc_id, score in want.items():
            assert abs(got[doc_id] - score) < 1e-9


# -- criteria changed after work began ----------------------------------------------------------


def test_a_criteria_change_names_what_was_removed_and_added_by_what_it_asks() -> None:
    from taskgate.domain.models import CriterionKind
    from taskgate.domain.specs import CHANGE_LABELS, criteria_change

    unit = Criterion(id="AC-p-1.1", text="unit", kind=CriterionKind.TEST, verify_ref="tests.t.test_unit")
    slow = Criterion(id="AC-p-1.2", text="slow", kind=CriterionKind.TEST, verify_ref="tests.t.test_slow")
    docs = Criterion(id="AC-p-1.1", text="documented")
    # Renumbered but asking the same: no change.
    same = criteria_change(
        [unit], [unit.model_copy(update={"id": "AC-p-1.9"})], after_attempt=1, by="h", at=T0
    )
    assert same is None
    change = criteria_change([unit, slow], [unit, docs], after_attempt=2, by="human:a", at=T0)
    assert change is not None
    assert change.after_attempt == 2 and change.by == "human:a"
    assert change.removed == ["AC-p-1.2 (test): tests.t.test_slow"]
    assert change.added == ["AC-p-1.1 (review): documented"]
    many = [Criterion(id=f"AC-p-1.{i}", text=f"c{i}" + "x" * 400) for i in range(30)]
    big = criteria_change(many, [], after_attempt=1, by="h", at=T0)
    assert big is not None and len(big.removed) == CHANGE_LABELS + 1
    assert big.removed[-1].startswith("and 20 more")
    assert all(len(label) <= 160 for label in big.removed)


def test_the_brief_says_the_criteria_changed_and_keeps_saying_it_when_cut() -> None:
    from taskgate.domain.models import CriteriaChange

    change = CriteriaChange(after_attempt=1, by="human:a", at=T0, removed=["AC-p-1.2 (test): t"], added=[])
    b = build_brief(task=make_task(criteria_changes=[change]))
    assert b["criteria_changes"] == [
        {"after_attempt": 1, "by": "human:a", "removed": ["AC-p-1.2 (test): t"], "added": []}
    ]
    assert build_brief()["criteria_changes"] == []
    # Under pressure the change may be left out, but `omitted` then says one was.
    huge = [
        CriteriaChange(
            after_attempt=i, by="human:a", at=T0, removed=[f"AC-p-1.{i} (review): " + "y" * 150] * 10
        )
        for i in range(5)
    ]
    crowded = build_brief(task=make_task(criteria_changes=huge, description="d" * 5000))
    assert len(json.dumps(crowded, separators=(",", ":"))) <= briefs.TOKEN_BUDGET * briefs.CHARS_PER_TOKEN
    shown = len(crowded["criteria_changes"])
    assert shown < 5
    assert crowded["omitted"]["criteria changes"] == 5 - shown

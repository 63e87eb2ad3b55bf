"""`taskgate task show`: a task as a person reads it at a terminal."""

from __future__ import annotations

from typing import Any

from taskgate.domain.brief import CHECK_OUTPUT_CHARS, ITEM_TEXT_CHARS
from taskgate.domain.merging import MergedBase, held_for
from taskgate.domain.principals import VIA_SAID, Via
from taskgate.domain.text import tail_lines

INDENT = "        "


def _indented(text: str) -> list[str]:
    return [f"{INDENT}{line}".rstrip() for line in text.splitlines()]


def _clip(text: str) -> str:
    return text if len(text) <= ITEM_TEXT_CHARS else text[: ITEM_TEXT_CHARS - 1].rstrip() + "…"


def finding_lines(f: dict[str, Any]) -> list[str]:
    """A finding as the brief and the board give it: each failing criterion with its failing
    tests' own messages, then each failing check with the end of its output (the brief's
    limits); a human's findings (and a verifier's from before they were structured) as written."""
    out = [f"  attempt {f.get('attempt')}, {f['source']} {f['by']}: {f['summary']}"]
    mismatch = f.get("self_report_mismatch") or []
    if mismatch:
        out.append(f"    the agent reported pass for {', '.join(mismatch)}, which the verifier did not find")
    criteria, checks = f.get("criteria") or [], f.get("checks") or []
    if not criteria and not checks:
        return out + [f"    - {d}" for d in f.get("details") or []]
    for c in criteria:
        result = "spec error" if c.get("spec_error") else c.get("result")
        out.append(f"    - {c['id']} {result}" + (f": {c['detail']}" if c.get("detail") else ""))
        for t in c.get("tests") or []:
            out.append(f"      test {t['name']}" + (":" if t.get("message") else ""))
            out += _indented(_clip(t.get("message") or ""))
    for k in checks:
        output = tail_lines(k.get("output_end") or "", CHECK_OUTPUT_CHARS)
        out.append(
            f"    - check {k['name']} exited {k.get('exit_code')}" + ("; its output ends:" if output else "")
        )
        out += _indented(output)
    return out


def how_accepted(event: dict[str, Any]) -> str:
    """For an acceptance in the history: how it was made (Via), and whether in a batch."""
    if event.get("action") != "accept":
        return ""
    detail = event.get("detail") or {}
    via = detail.get("via")
    known = {v.value for v in Via}
    said = VIA_SAID[Via(via)] if isinstance(via, str) and via in known else "how: not recorded"
    if via == Via.DELEGATED and event.get("on_behalf_of"):
        said += f" for {event['on_behalf_of']}"
    return f"  ({said}{', in a batch' if detail.get('batch') else ''})"


def _evidence_line(ev: dict[str, Any]) -> str:
    detail = (ev.get("detail") or ev.get("rationale") or "").strip().splitlines()
    line = f"      {ev.get('result', '?'):9} {detail[0][:160] if detail else ''}".rstrip()
    without = ev.get("without_change")
    if ev.get("passes_without_change"):
        line += "\n        passes without the change: its new test passes on the baseline's code too"
    elif isinstance(without, dict):
        line += f"\n        on the baseline's code: {without.get('result')}"
    return line


def changed_lines(base: dict[str, Any]) -> list[str]:
    """A run's baseline and the paths its submission changes, protected ones and test files marked."""
    where = (
        f"{base.get('branch')} at {base['commit'][:12]}"
        if base.get("commit")
        else f"none ({base.get('why')})"
    )
    listed = base.get("changed") or []
    total = base.get("changed_total") or len(listed)
    out = [f"changed paths against the baseline, {where}: {total}"]
    protected, tests = set(base.get("protected") or []), set(base.get("test_files") or [])
    allowed = set((base.get("allowed") or {}).get("paths") or [])
    for path in listed:
        marks = [
            m
            for m, on in (
                ("protected", path in protected),
                ("allowed", path in allowed),
                ("test", path in tests),
            )
            if on
        ]
        out.append(f"  {path}" + (f"  [{', '.join(marks)}]" if marks else ""))
    if total > len(listed):
        out.append(f"  … and {total - len(listed)} more")
    return out


def _conflict(c: dict[str, Any]) -> str:
    paths = c.get("paths") or []
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return f" conflict with {c.get('branch')} at {str(c.get('tip'))[:12]} in {shown}"


def show_text(detail: dict[str, Any], spec: dict[str, Any] | None) -> str:
    """A task as a person reads it at a terminal: criteria with the last run's evidence,
    attempts, findings, runs, notes and history."""
    t = detail["task"]
    runs = detail.get("runs") or []
    last = runs[-1] if runs else None
    held = set(t.get("spec_criteria") or [])
    criteria = [c for c in (spec or {}).get("criteria", []) if not held or c["id"] in held]
    criteria += t.get("criteria") or []
    out = [
        f"{t['id']}  {t['status']}  {t['title']}",
        f"  risk {t['risk']}, priority {t['priority']}, attempts used {t['attempts_used']}"
        + (f", spec {t['spec_id']}" if t.get("spec_id") else "")
        + (f", blocked by {', '.join(t['blocked_by'])}" if t.get("blocked_by") else ""),
    ]
    if t.get("verified_on"):
        stale = (
            f" ({t.get('stale_note') or 'stale: the base branch has moved since'})" if t.get("stale") else ""
        )
        out.append(f"  verified on {t['verified_on']}{stale}")
    if t.get("queue"):
        q = t["queue"]
        out.append(f"  in the landing queue: {q['position']} of {q['of']}, {q['state']}")
    if t.get("landed"):
        landed = t["landed"]
        out.append(f"  landed on {landed['branch']} at {landed['commit']} (from {landed['from_tip'][:12]})")
    if t.get("needs_human"):
        out.append(f"  waits for a human: {t['needs_human'].get('text') or t['needs_human']}")
    if t.get("claim"):
        c = t["claim"]
        out.append(f"  held by {c['actor']} (attempt {c['attempt']}) until {c['expires_at']}")
    out.append("criteria" + (f" (evidence of run {last['id']}, {last['status']}):" if last else ":"))
    evidence = (last or {}).get("evidence") or {}
    for c in criteria:
        ref = f"  `{c['verify_ref']}`" if c.get("verify_ref") else ""
        kind = f"{c['kind']}, guard" if c.get("guard") else c["kind"]
        out.append(f"  {c['id']} ({kind}) {c['text']}{ref}")
        if c["id"] in evidence:
            out.append(_evidence_line(evidence[c["id"]]))
    if t.get("attempts"):
        out.append("attempts:")
        for a in t["attempts"]:
            sub = a.get("submission") or {}
            commit = f", commit {sub['commit_sha'][:12]}" if sub.get("commit_sha") else ""
            out.append(f"  #{a['number']} {a['actor']}: {a['state']}{commit}")
    if t.get("findings"):
        out.append("findings:")
        for f in t["findings"]:
            out += finding_lines(f)
    if runs:
        out.append("verification runs:")
        for r in runs:
            checks = ", ".join(
                f"{name} exit {c.get('exit_code')}" for name, c in (r.get("checks") or {}).items()
            )
            out.append(
                f"  {r['id']} attempt {r['attempt']} {r['commit_sha'][:12]}: {r['status']}"
                + (" re-verification" if r.get("reverify") else "")
                + (f" on {held_for(MergedBase.model_validate(r['base']))}" if r.get("base") else "")
                + (_conflict(r["conflict"]) if r.get("conflict") else "")
                + (f" ({checks})" if checks else "")
                + (f" — {r['summary']}" if r.get("summary") else "")
            )
    if last and last.get("baseline"):
        out += changed_lines(last["baseline"])
    if detail.get("notes"):
        out.append("notes:")
        out += [f"  {n['at']}  {n['author']}: {n['body']}" for n in detail["notes"]]
    out.append("history:")
    out += [
        f"  {e['at']}  {e['action']}  {e.get('from_status') or ''} -> {e.get('to_status') or ''}  {e['actor']}"
        + how_accepted(e)
        for e in detail.get("history", [])
    ]
    return "\n".join(out)

"""The preset zlib dictionary of stored bodies (store/body.py): frozen, forever.

A task's body is ~1-2 KB of JSON, a third of it field names and stock values that are the same
in every task. zlib can start from a preset dictionary holding them, so each body pays for them
once in the dictionary instead of once per item: a typical task at submit then compresses to
under 1 KB (bench/cost.py prints it), which keeps it inside one DynamoDB write unit
with the history chain's head in it.

A stream compressed with a dictionary names it (its adler32, in the zlib header), and decoding
picks the dictionary by that id. So this one must never change: a body written with it can only
be read with exactly these bytes. A better dictionary later is a new constant added to
`DICTIONARIES` (and made the one `body.encode` uses), never an edit of this one.

zlib uses the end of a dictionary best (shortest distances), so the most frequent strings come
last. Order within: runs and statements first, then tasks.
"""

from __future__ import annotations

import zlib

V1 = (
    b'{"payloadType":"application/vnd.in-toto+json","signatures":[{"keyid":"","sig":""}],'
    b'"payloadText":"{\\"_type\\":\\"https://in-toto.io/Statement/v1\\",\\"predicate\\":{'
    b'\\"configuration\\":[{\\"digest\\":{\\"sha256\\":\\"\\"},\\"name\\":\\"\\"}],'
    b'\\"failedTests\\":[],\\"passedTests\\":[],\\"result\\":\\"PASSED\\",\\"FAILED\\",'
    b'\\"WARNED\\",\\"url\\":\\"\\"},\\"predicateType\\":\\"https://in-toto.io/attestation/'
    b'test-result/v0.1\\",\\"https://slsa.dev/verification_summary/v1\\",\\"subject\\":[{'
    b'\\"digest\\":{\\"gitCommit\\":\\"\\"},\\"name\\":\\"\\"}]}"}'
    b'"task_id":"","attempt":1,"started_at":"","finished_at":"","summary":"","checks":[{"name":'
    b'"","exit_code":0,"output_end":"","report_sha256":""}],"evidence":[{"criterion_id":"AC-",'
    b'"result":"pass","fail","detail":"","tests":[{"name":"","message":""}]}],'
    b'"attestation":{},"attestation_seq":,"status":"passed","failed","error",'
    b'"findings":[{"attempt":1,"source":"verifier","by":"verifier:","at":"","summary":"",'
    b'"details":[],"self_report_mismatch":false,"criteria":[],"checks":[]}],'
    b'"criteria_changes":[],"needs_human":{"why":"","reason":"","suggested":""},'
    b'"blocked_by":[],"dependents":[],"verification_commands":[],"spec_criteria":[],'
    b'"live_run":"","max_attempts":3,"spec_id":"SPEC-",'
    b'"claim":{"token_hash":"","actor":"agent:","credential_id":"key_","attempt":1,'
    b'"claimed_at":"2026-","expires_at":"2026-","lease_minutes":30,"phase":"working",'
    b'"last_heartbeat_at":"2026-"},'
    b'{"id":"","project":"","number":1,"title":"","description":"","status":"backlog","ready",'
    b'"claimed","needs_verification","verified","done","needs_human","cancelled",'
    b'"priority":0,"risk":"low","medium","high",'
    b'"criteria":[{"id":"AC-","text":"","kind":"command","review","test","verify_ref":"tests."}],'
    b'"attempts_used":0,"attempts":[{"number":1,"actor":"agent:","credential_id":"key_",'
    b'"started_at":"2026-","ended_at":"2026-","ending":"","used":false,"true,"failure_kind":"",'
    b'"learned":"","submission":{"commit_sha":"","evidence":"","self_report":"",'
    b'"actor":"agent:","credential_id":"key_","submitted_at":"2026-"}}],'
    b'"verifier_errors_in_row":0,"history_head":"","attestation_head":"",'
    b'"created_by":"human:","created_at":"2026-","updated_at":"2026-","status_changed_at":"2026-'
)

# By id (the adler32 a zlib stream's header names its dictionary by).
DICTIONARIES: dict[int, bytes] = {zlib.adler32(V1): V1}
CURRENT = V1

"""The one botocore configuration every AWS client of the server uses (the DynamoDB store, the
KMS signer): what a call may take, and how often botocore retries it.

botocore's defaults wait 60 s to read an answer and retry in legacy mode, inside functions that
API Gateway cuts at 29 s: a slow or throttled service ended in the gateway's timeout, with
nothing said. Here a call gives up well before that (a connect of 2 s, a read of 5 s, three
attempts in botocore's standard mode, which backs off with jitter and retries throttling and
transient errors), and the store answers E_UNAVAILABLE (503). The service layer retries only
lost races (Context.retrying), within a total budget, never around these retries.
"""

from __future__ import annotations

from typing import Any

CONNECT_TIMEOUT_S = 2
READ_TIMEOUT_S = 5
MAX_ATTEMPTS = 3  # botocore's total_max_attempts: the first call and two retries

# The keyword arguments of botocore.config.Config for every client: plain data here, so this
# module needs no AWS library (those stay in the adapters that call AWS).
CLIENT_CONFIG: dict[str, Any] = {
    "connect_timeout": CONNECT_TIMEOUT_S,
    "read_timeout": READ_TIMEOUT_S,
    "retries": {"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
}

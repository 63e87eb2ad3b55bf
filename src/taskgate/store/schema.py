"""The table's key schema and indexes, in one place: adapters, tests and template.yaml read it.

One logical table with PK/SK and three sparse global secondary indexes:

- QUEUE: per (project, status) queue of tasks ordered by priority then age. Its partition key
  is "Q#<status>#<project>", never a bare status, so no partition is shared by all projects
  (status first, so a stream filter can select a status by prefix).
- LEASE: claimed tasks by lease expiry. The partition key is "L#<shard>" with
  LEASE_SHARDS shards (hash of the task id), so the sweeper's writes do not meet on one key.
- LOOKUP: exact lookups by a secondary key, e.g. "KH#<key hash>" for credentials.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class IndexName(StrEnum):
    QUEUE = "GSI1"
    LEASE = "GSI2"
    LOOKUP = "GSI3"


LEASE_SHARDS = 8

PK = "PK"
SK = "SK"
VERSION = "V"
DATA = "D"
EXPIRES = "X"  # a lease's end (Item.expires); ops with alive_at condition on it

INDEX_ATTRS: dict[IndexName, tuple[str, str]] = {
    IndexName.QUEUE: ("GSI1PK", "GSI1SK"),
    IndexName.LEASE: ("GSI2PK", "GSI2SK"),
    IndexName.LOOKUP: ("GSI3PK", "GSI3SK"),
}


def dynamodb_table_definition(table_name: str) -> dict[str, Any]:
    """Arguments for DynamoDB CreateTable (tests); template.yaml mirrors these names."""
    attrs = [{"AttributeName": PK, "AttributeType": "S"}, {"AttributeName": SK, "AttributeType": "S"}]
    gsis = []
    for index, (ipk, isk) in INDEX_ATTRS.items():
        attrs += [{"AttributeName": ipk, "AttributeType": "S"}, {"AttributeName": isk, "AttributeType": "S"}]
        gsis.append(
            {
                "IndexName": index.value,
                "KeySchema": [
                    {"AttributeName": ipk, "KeyType": "HASH"},
                    {"AttributeName": isk, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        )
    return {
        "TableName": table_name,
        "AttributeDefinitions": attrs,
        "KeySchema": [{"AttributeName": PK, "KeyType": "HASH"}, {"AttributeName": SK, "KeyType": "RANGE"}],
        "GlobalSecondaryIndexes": gsis,
        "BillingMode": "PAY_PER_REQUEST",
    }

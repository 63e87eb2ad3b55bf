"""The table's key schema and indexes, in one place: adapters, tests and template.yaml read it.

One logical table with PK/SK and two sparse global secondary indexes:

- QUEUE: per (project, status) queue of tasks ordered by priority then age; a project's claimed
  tasks ordered by lease expiry instead, so lapsed leases are found with one query per project
  (by every read of the project's tasks, and by the sweeper). Its partition key is
  "Q#<status>#<project>", never a bare status, so no partition is shared by all projects
  (status first, so a stream filter can select a status by prefix).
- LOOKUP: exact lookups by a secondary key, e.g. "KH#<key hash>" for credentials.

There is no separate lease index: the claimed queue is one already, and every index a task is
in costs write units on each write that moves it there (a heartbeat moves its lease).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class IndexName(StrEnum):
    QUEUE = "GSI1"
    LOOKUP = "GSI3"  # GSI2 was a lease index; the claimed queue serves that purpose


PK = "PK"
SK = "SK"
VERSION = "V"
DATA = "D"  # the JSON body, as text
COMPRESSED = "Z"  # or zlib-compressed, when that is smaller by enough (store/body.py)
EXPIRES = "X"  # a lease's end (Item.expires); ops with alive_at condition on it

INDEX_ATTRS: dict[IndexName, tuple[str, str]] = {
    IndexName.QUEUE: ("GSI1PK", "GSI1SK"),
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

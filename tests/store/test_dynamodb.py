"""DynamoDB adapter specifics the conformance suite cannot see: storage format, which requests
a commit costs, retries on TransactionConflict, and DynamoDB's paging quirks (short pages and a
LastEvaluatedKey with nothing after it)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.store import body, zdict
from taskgate.store import cursor as cursors
from taskgate.store.dynamodb import GET_MANY_ROUNDS, DynamoDBStore
from taskgate.store.port import Check, ConflictError, Delete, Item, Put
from taskgate.store.schema import IndexName
from tests.support.dynamo import SerializedClient, dynamodb_store

Q = IndexName.QUEUE


class Intercept:
    """A client proxy: methods named in `overrides` go to the override (which gets the real
    method as its first argument); everything else goes to the real client."""

    def __init__(self, client: Any, **overrides: Callable[..., Any]) -> None:
        self._client = client
        self._overrides = overrides
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._client, name)
        if name in self._overrides:
            override = self._overrides[name]

            def call(**kwargs: Any) -> Any:
                self.calls.append(name)
                return override(real, **kwargs)

            return call
        return real


@pytest.fixture
def dynamo() -> Iterator[DynamoDBStore]:
    with dynamodb_store() as store:
        store._sleep = lambda _s: None  # no real backoff in tests
        yield store


def operations(store: DynamoDBStore) -> list[str]:
    """Record the name of every DynamoDB request the store's client sends."""
    seen: list[str] = []

    def record(model: Any, **_: Any) -> None:
        seen.append(model.name)

    store._client.meta.events.register("before-call.dynamodb", record)
    return seen


def client_error(code: str, operation: str, reasons: list[str] | None = None) -> ClientError:
    response: dict[str, Any] = {"Error": {"Code": code, "Message": code}}
    if reasons is not None:
        response["CancellationReasons"] = [{"Code": r} for r in reasons]
    return ClientError(response, operation)  # type: ignore[arg-type]


def test_storage_format(dynamo: DynamoDBStore) -> None:
    it = Item("T#1", "META", {"b": [1, 2], "a": "é"}, 1, {Q: ("Q#p#ready", "0000000001#T#1")})
    dynamo.commit([Put(it)])
    raw = dynamo._client.get_item(TableName=dynamo.table_name, Key={"PK": {"S": "T#1"}, "SK": {"S": "META"}})
    assert raw["Item"] == {
        "PK": {"S": "T#1"},
        "SK": {"S": "META"},
        "V": {"N": "1"},
        # UTF-8, not \u escapes: DynamoDB counts an item's size in UTF-8 bytes
        "D": {"S": '{"b":[1,2],"a":"é"}'},
        "GSI1PK": {"S": "Q#p#ready"},
        "GSI1SK": {"S": "0000000001#T#1"},
    }
    leased = Item("T#2", "META", {}, 1, expires="2026-01-01T00:30:00.000000Z")
    dynamo.commit([Put(leased)])
    raw = dynamo._client.get_item(TableName=dynamo.table_name, Key={"PK": {"S": "T#2"}, "SK": {"S": "META"}})
    assert raw["Item"]["X"] == {"S": "2026-01-01T00:30:00.000000Z"}


def test_a_body_from_512_bytes_on_is_stored_compressed_and_reads_back(dynamo: DynamoDBStore) -> None:
    data = {"description": "Members get 10% off every item in the cart. " * 20, "n": 7, "a": "é"}
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    assert len(text.encode()) >= body.COMPRESS_FROM
    dynamo.commit([Put(Item("T#1", "META", data))])
    key = {"PK": {"S": "T#1"}, "SK": {"S": "META"}}
    raw = dynamo._client.get_item(TableName=dynamo.table_name, Key=key)["Item"]
    assert "D" not in raw and body.inflate(raw["Z"]["B"]).decode() == text
    # Compressed from the preset dictionary, named in the zlib header (RFC 1950 FDICT, DICTID).
    assert raw["Z"]["B"][1] & 0x20 and int.from_bytes(raw["Z"]["B"][2:6], "big") == zlib.adler32(zdict.V1)
    with pytest.raises(zlib.error):
        zlib.decompress(raw["Z"]["B"])  # without the dictionary it does not read
    assert len(raw["Z"]["B"]) < len(text.encode()) / 4  # (repetitive text; a real task gets ~40%)
    assert dynamo.get("T#1", "META") == Item("T#1", "META", data)
    # As the stream hands it to a function: binary values in base64.
    assert body.decode({"Z": {"B": base64.b64encode(raw["Z"]["B"]).decode()}}) == data
    # An item written as text before bodies were compressed still reads.
    old = {**key, "V": {"N": "1"}, "D": {"S": text}}
    dynamo._client.put_item(TableName=dynamo.table_name, Item={**old, "SK": {"S": "OLD"}})
    assert dynamo.get("T#1", "OLD") == Item("T#1", "OLD", data)
    # And one compressed before the dictionary existed (plain zlib).
    plain = {**key, "SK": {"S": "PLAIN"}, "V": {"N": "1"}, "Z": {"B": zlib.compress(text.encode(), 9)}}
    dynamo._client.put_item(TableName=dynamo.table_name, Item=plain)
    assert dynamo.get("T#1", "PLAIN") == Item("T#1", "PLAIN", data)
    with pytest.raises(ValueError):
        body.decode({"Z": {"B": raw["Z"]["B"][:20]}})
    unknown = bytearray(raw["Z"]["B"])
    unknown[2:6] = (zlib.adler32(b"another dictionary")).to_bytes(4, "big")
    with pytest.raises(ValueError, match="unknown dictionary"):
        body.decode({"Z": {"B": bytes(unknown)}})


def test_a_compressed_body_reads_by_hand_as_the_docstring_says(dynamo: DynamoDBStore) -> None:
    data = {"description": "Gift cards in a member's cart are never discounted. " * 12}
    dynamo.commit([Put(Item("T#1", "META", data))])
    key = {"PK": {"S": "T#1"}, "SK": {"S": "META"}}
    z = dynamo._client.get_item(TableName=dynamo.table_name, Key=key)["Item"]["Z"]["B"]
    shown = subprocess.run(
        [sys.executable, "-m", "taskgate.store.body"], input=z, capture_output=True, check=True
    )
    assert json.loads(shown.stdout) == data
    bad = subprocess.run([sys.executable, "-m", "taskgate.store.body"], input=b"xx", capture_output=True)
    assert bad.returncode == 1 and b"not a compressed taskgate body" in bad.stderr


def test_one_write_is_one_conditional_write_not_a_transaction(dynamo: DynamoDBStore) -> None:
    seen = operations(dynamo)
    dynamo.commit([Put(Item("T#1", "META", {}))])
    dynamo.commit([Put(Item("T#1", "META", {}, 2), expected_version=1)])
    dynamo.commit([Check("T#1", "META", expected_version=2)])
    dynamo.commit([Delete("T#1", "META", expected_version=2)])
    assert seen == ["PutItem", "PutItem", "GetItem", "DeleteItem"]
    seen.clear()
    dynamo.commit([Put(Item("T#1", "META", {})), Put(Item("T#1", "EV#1", {}))])
    assert seen == ["TransactWriteItems"]


def test_reads_cost_one_request_when_they_can(dynamo: DynamoDBStore) -> None:
    dynamo.commit([Put(Item("P", f"{i}", {})) for i in range(5)])
    seen = operations(dynamo)
    assert dynamo.query("P", limit=5).cursor is None
    assert dynamo.query("P", limit=4).cursor is not None
    assert len(dynamo.get_many([("P", f"{i}") for i in range(5)])) == 5
    assert seen == ["Query", "Query", "BatchGetItem"]


def test_a_transaction_conflict_is_a_conflict_error_at_once(dynamo: DynamoDBStore) -> None:
    """Not retried in the store: the service's one retry policy (Context.retrying) runs the use
    case again, so retries never nest."""

    def always(real: Callable[..., Any], **kwargs: Any) -> Any:
        raise client_error(
            "TransactionCanceledException", "TransactWriteItems", ["None", "TransactionConflict"]
        )

    dynamo._client = Intercept(dynamo._client, transact_write_items=always)  # type: ignore[assignment]
    with pytest.raises(ConflictError) as caught:
        dynamo.commit([Put(Item("A", "1", {})), Put(Item("B", "1", {}))])
    assert caught.value.reason == "transaction conflict"
    assert caught.value.failed == [("B", "1")]
    assert dynamo._client.calls == ["transact_write_items"]  # type: ignore[attr-defined]
    assert dynamo.get("A", "1") is None


def test_failed_condition_wins_over_transaction_conflict_and_is_not_retried(dynamo: DynamoDBStore) -> None:
    def cancelled(real: Callable[..., Any], **kwargs: Any) -> Any:
        raise client_error(
            "TransactionCanceledException",
            "TransactWriteItems",
            ["TransactionConflict", "ConditionalCheckFailed"],
        )

    dynamo._client = Intercept(dynamo._client, transact_write_items=cancelled)  # type: ignore[assignment]
    with pytest.raises(ConflictError) as caught:
        dynamo.commit([Put(Item("A", "1", {})), Put(Item("B", "1", {}))])
    assert caught.value.failed == [("B", "1")]
    assert caught.value.reason == "condition failed"
    assert dynamo._client.calls == ["transact_write_items"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("reasons", [["None", "ThrottlingError"], ["ValidationError", "None"], None])
def test_other_cancellations_are_not_conflicts(dynamo: DynamoDBStore, reasons: list[str] | None) -> None:
    def cancelled(real: Callable[..., Any], **kwargs: Any) -> Any:
        raise client_error("TransactionCanceledException", "TransactWriteItems", reasons)

    dynamo._client = Intercept(dynamo._client, transact_write_items=cancelled)  # type: ignore[assignment]
    with pytest.raises(ClientError):
        dynamo.commit([Put(Item("A", "1", {})), Put(Item("B", "1", {}))])


def test_single_write_transaction_conflict_is_a_conflict_error(dynamo: DynamoDBStore) -> None:
    dynamo.commit([Put(Item("A", "1", {}))])

    def always(real: Callable[..., Any], **kwargs: Any) -> Any:
        raise client_error("TransactionConflictException", "DeleteItem")

    dynamo._client = Intercept(dynamo._client, delete_item=always)  # type: ignore[assignment]
    with pytest.raises(ConflictError) as caught:
        dynamo.commit([Delete("A", "1", expected_version=1)])
    assert caught.value.reason == "transaction conflict"
    assert caught.value.failed == [("A", "1")]
    assert dynamo._client.calls == ["delete_item"]  # type: ignore[attr-defined]
    assert dynamo.get("A", "1") is not None


def test_short_pages_and_empty_pages_with_a_last_evaluated_key(dynamo: DynamoDBStore) -> None:
    """DynamoDB may stop before Limit (1 MB per response) and may hand back a LastEvaluatedKey
    with no items at all; the adapter keeps reading so every page but the last is full."""
    items = [Item("P", f"EV#{i:02d}", {"i": i}, 1, {Q: ("Q#p#ready", f"{i % 4}")}) for i in range(13)]
    dynamo.commit([Put(it) for it in items])
    empty_turn = [True]

    def stingy(real: Callable[..., Any], **kwargs: Any) -> Any:
        if empty_turn[0] and "ExclusiveStartKey" in kwargs:
            empty_turn[0] = False  # once per page: an empty answer that says "go on"
            return {"Items": [], "LastEvaluatedKey": kwargs["ExclusiveStartKey"]}
        empty_turn[0] = True
        return real(**{**kwargs, "Limit": min(kwargs["Limit"], 2)})

    dynamo._client = Intercept(dynamo._client, query=stingy)  # type: ignore[assignment]
    for descending in (False, True):
        pages = []
        cursor = None
        while True:
            page = dynamo.query("P", limit=5, cursor=cursor, descending=descending)
            pages.append(page)
            if page.cursor is None:
                break
            cursor = page.cursor
        assert [len(p.items) for p in pages] == [5, 5, 3]
        assert [it for p in pages for it in p.items] == (items[::-1] if descending else items)

        got: list[Item] = []
        cursor = None
        while True:
            page = dynamo.query_index(Q, "Q#p#ready", limit=4, cursor=cursor, descending=descending)
            assert page.cursor is None or len(page.items) == 4
            got.extend(page.items)
            if page.cursor is None:
                break
            cursor = page.cursor
        want = sorted(items, key=lambda it: (it.indexes[Q][1], it.pk, it.sk), reverse=descending)
        assert got == want


def test_get_many_asks_again_for_unprocessed_keys(dynamo: DynamoDBStore) -> None:
    items = [Item("P", f"{i:03d}", {"i": i}) for i in range(30)]
    dynamo.commit([Put(it) for it in items[:15]])
    dynamo.commit([Put(it) for it in items[15:]])

    def partial(real: Callable[..., Any], **kwargs: Any) -> Any:
        request = kwargs["RequestItems"][dynamo.table_name]
        keys, rest = request["Keys"][:7], request["Keys"][7:]
        answer = real(RequestItems={dynamo.table_name: {**request, "Keys": keys}})
        if rest:
            answer["UnprocessedKeys"] = {dynamo.table_name: {**request, "Keys": rest}}
        return answer

    slept: list[float] = []
    dynamo._sleep = slept.append
    dynamo._client = Intercept(dynamo._client, batch_get_item=partial)  # type: ignore[assignment]
    wanted = [("P", f"{i:03d}") for i in reversed(range(30))]
    assert dynamo.get_many(wanted) == items[::-1]
    assert dynamo._client.calls == ["batch_get_item"] * 5  # type: ignore[attr-defined]
    assert len(slept) == 4


def test_get_many_gives_up_on_keys_left_unprocessed_with_e_unavailable(dynamo: DynamoDBStore) -> None:
    dynamo.commit([Put(Item("P", "1", {}))])

    def nothing(real: Callable[..., Any], **kwargs: Any) -> Any:
        request = kwargs["RequestItems"][dynamo.table_name]
        return {"Responses": {}, "UnprocessedKeys": {dynamo.table_name: request}}

    dynamo._client = Intercept(dynamo._client, batch_get_item=nothing)  # type: ignore[assignment]
    with pytest.raises(TaskgateError) as caught:
        dynamo.get_many([("P", "1")])
    assert caught.value.code is ErrorCode.UNAVAILABLE
    assert caught.value.message == "the table is busy (reads left unprocessed); try again in a moment"
    assert dynamo._client.calls == ["batch_get_item"] * GET_MANY_ROUNDS  # type: ignore[attr-defined]


def test_get_many_splits_into_batches_of_100(dynamo: DynamoDBStore) -> None:
    seen = operations(dynamo)
    assert dynamo.get_many([("P", f"{i}") for i in range(201)]) == []
    assert seen == ["BatchGetItem"] * 3


def test_cursor_outside_the_query_is_a_validation_error(dynamo: DynamoDBStore) -> None:
    dynamo.commit([Put(Item("P", "EV#1", {})), Put(Item("P", "EV#2", {}))])
    with pytest.raises(TaskgateError) as caught:
        dynamo.query("P", sk_prefix="EV#", cursor=cursors.encode({"sk": "META"}))
    assert caught.value.code is ErrorCode.VALIDATION
    position = {"isk": "2024-06-01T00:00:00Z", "pk": "T#1", "sk": "META"}
    with pytest.raises(TaskgateError):
        dynamo.query_index(IndexName.QUEUE, "L#1", sk_lt="2024-01-01", cursor=cursors.encode(position))
    with pytest.raises(TaskgateError):
        dynamo.query_index(IndexName.QUEUE, "L#1", sk_prefix="2023", cursor=cursors.encode(position))
    with pytest.raises(TaskgateError):
        dynamo.query_index(IndexName.QUEUE, "L#1", cursor=cursors.encode({**position, "pk": 7}))


def test_validation_error_on_a_start_key_becomes_a_cursor_error(dynamo: DynamoDBStore) -> None:
    """Real DynamoDB refuses a start key outside the key condition with a ValidationException;
    from a cursor, that is the caller's error (E_VALIDATION); without one it is ours (raised)."""

    def refuse(real: Callable[..., Any], **kwargs: Any) -> Any:
        raise client_error("ValidationException", "Query")

    dynamo._client = Intercept(dynamo._client, query=refuse)  # type: ignore[assignment]
    with pytest.raises(TaskgateError) as caught:
        dynamo.query("P", cursor=cursors.encode({"sk": "A"}))
    assert caught.value.code is ErrorCode.VALIDATION
    with pytest.raises(ClientError):
        dynamo.query("P")


def test_serialized_client_passes_exceptions_and_meta_through() -> None:
    with dynamodb_store(serialized=True) as store:
        client = store._client
        assert isinstance(client, SerializedClient)
        assert issubclass(client.exceptions.ConditionalCheckFailedException, ClientError)
        assert client.meta.service_model.service_name == "dynamodb"
        store.commit([Put(Item("A", "1", {}))])
        try:
            client.put_item(
                TableName=store.table_name,
                Item={"PK": {"S": "A"}, "SK": {"S": "1"}},
                ConditionExpression="attribute_not_exists(PK)",
            )
        except client.exceptions.ConditionalCheckFailedException:
            pass
        else:  # pragma: no cover
            pytest.fail("the conditional put should have failed")


def test_the_preset_dictionary_never_changes() -> None:
    # Bodies written with it read only with exactly these bytes (store/zdict.py): a change to V1
    # makes every stored task unreadable. A better dictionary is a new constant, not an edit.
    assert zlib.adler32(zdict.V1) == 0x11DEB91E and len(zdict.V1) == 2123
    assert zdict.DICTIONARIES[0x11DEB91E] is zdict.V1

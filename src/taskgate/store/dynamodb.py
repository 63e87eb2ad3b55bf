"""DynamoDB adapter: one table (schema.py), boto3's low-level client, the SQLite adapter's semantics.

Storage format of an item: PK, SK (S), V (N, the version), the JSON body as D (S) or, from
512 bytes on, zlib-compressed as Z (B) (store/body.py: write units are paid per KB), X (S, the
lease's end, only on items that have one) and, for each index the item is in, that index's key
attributes (S). An item without an index's attributes is not in that sparse GSI.

Writes follow docs/architecture.md, "The store": a commit of one Put or Delete is a single
conditional PutItem / DeleteItem (a transaction costs twice the write units and about three times the
latency); several ops are one TransactWriteItems. botocore retries none of
ConditionalCheckFailed, TransactionCanceled or TransactionConflict: a failed condition is an
answer (ConflictError), and so is a clash with another in-flight transaction (the service's one
retry policy, Context.retrying, runs the use case again). Throttling and transient errors are
botocore's to retry (taskgate.aws, standard mode, three attempts); what is still throttled or
timed out after that is E_UNAVAILABLE, never a wait past the function's timeout.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, TypeVar, cast

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from taskgate.aws import CLIENT_CONFIG
from taskgate.domain.errors import ErrorCode, TaskgateError, invalid
from taskgate.store import body
from taskgate.store import cursor as cursors
from taskgate.store.port import (
    Check,
    ConflictError,
    Delete,
    IndexKey,
    Item,
    Op,
    Page,
    Put,
    key_of,
    lapsed,
    validate_ops,
)
from taskgate.store.schema import EXPIRES, INDEX_ATTRS, PK, SK, VERSION, IndexName

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        QueryInputTypeDef,
        TransactWriteItemTypeDef,
    )

    RawItem = dict[str, AttributeValueTypeDef]

    class _Condition(TypedDict):
        ConditionExpression: str
        ExpressionAttributeNames: dict[str, str]
        ExpressionAttributeValues: NotRequired[dict[str, AttributeValueTypeDef]]


T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

BATCH_GET_MAX = 100  # BatchGetItem's limit on keys per request
GET_MANY_ROUNDS = 5  # BatchGetItem requests per 100 keys, while some come back unprocessed
# Errors botocore's standard mode retries; still there after its attempts: the table is busy.
_THROTTLED = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
    }
)
_BACKOFF_MIN_S = 0.010
_BACKOFF_MAX_S = 0.200

_NEW = "attribute_not_exists(#pk)"
_AT_VERSION = "#v = :v"
_ALIVE = " AND (attribute_not_exists(#x) OR #x > :alive)"  # no lease, or one that runs past :alive


def _condition(expected_version: int | None, alive_at: str | None = None) -> _Condition:
    """ConditionExpression and its names/values for a must-not-exist or expected-version guard,
    plus the lease check when alive_at is given (validate_ops allows it only with a version)."""
    if expected_version is None:
        return {"ConditionExpression": _NEW, "ExpressionAttributeNames": {"#pk": PK}}
    if alive_at is None:
        return {
            "ConditionExpression": _AT_VERSION,
            "ExpressionAttributeNames": {"#v": VERSION},
            "ExpressionAttributeValues": {":v": {"N": str(expected_version)}},
        }
    return {
        "ConditionExpression": _AT_VERSION + _ALIVE,
        "ExpressionAttributeNames": {"#v": VERSION, "#x": EXPIRES},
        "ExpressionAttributeValues": {":v": {"N": str(expected_version)}, ":alive": {"S": alive_at}},
    }


def _backoff(attempt: int) -> float:
    """Jittered exponential backoff in seconds: between 10 ms and min(200 ms, 10 ms * 2**(attempt+1))."""
    cap = min(_BACKOFF_MAX_S, _BACKOFF_MIN_S * 2 ** (attempt + 1))
    return random.uniform(_BACKOFF_MIN_S, cap)


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _unavailable(why: str) -> TaskgateError:
    return TaskgateError(ErrorCode.UNAVAILABLE, f"{why}; try again in a moment")


def _answering(method: F) -> F:
    """A store method whose requests' throttling and timeouts, once botocore's own retries are
    spent, are E_UNAVAILABLE (503); every other error passes as it was."""

    @functools.wraps(method)
    def answering(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except ClientError as exc:
            if _error_code(exc) in _THROTTLED:
                raise _unavailable("the table is busy (throttled)") from exc
            raise
        except (ReadTimeoutError, ConnectTimeoutError, EndpointConnectionError) as exc:
            raise _unavailable("the table did not answer in time") from exc

    return cast("F", answering)


class _TransactionConflict(Exception):
    """Internal: the request clashed with another in-flight transaction on these keys."""

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__(keys)
        self.keys = keys


class DynamoDBStore:
    local_reads = False  # every read is an HTTPS request

    def __init__(
        self,
        table_name: str,
        *,
        client: Any | None = None,
        region_name: str | None = None,
        endpoint_url: str | None = None,
    ) -> None:
        self.table_name = table_name
        self._owns_client = client is None
        if client is None:
            client = boto3.client(
                "dynamodb", region_name=region_name, endpoint_url=endpoint_url, config=Config(**CLIENT_CONFIG)
            )
        self._client = cast("DynamoDBClient", client)
        self._sleep: Callable[[float], None] = time.sleep  # tests may replace it

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    # -- encoding ----------------------------------------------------------------------------

    @staticmethod
    def _key(pk: str, sk: str) -> RawItem:
        return {PK: {"S": pk}, SK: {"S": sk}}

    @staticmethod
    def _encode(item: Item) -> RawItem:
        raw: RawItem = {
            PK: {"S": item.pk},
            SK: {"S": item.sk},
            VERSION: {"N": str(item.version)},
        }
        name, value = body.encode(item.body)
        raw[name] = cast("AttributeValueTypeDef", value)
        if item.expires is not None:
            raw[EXPIRES] = {"S": item.expires}
        for name, (ipk, isk) in item.indexes.items():
            attr_pk, attr_sk = INDEX_ATTRS[name]
            raw[attr_pk] = {"S": ipk}
            raw[attr_sk] = {"S": isk}
        return raw

    @staticmethod
    def _decode(raw: RawItem) -> Item:
        indexes: dict[IndexName, tuple[str, str]] = {}
        for name, (attr_pk, attr_sk) in INDEX_ATTRS.items():
            if attr_pk in raw:
                indexes[name] = (raw[attr_pk]["S"], raw[attr_sk]["S"])
        expires = raw[EXPIRES]["S"] if EXPIRES in raw else None
        return Item(raw[PK]["S"], raw[SK]["S"], body.decode(raw), int(raw[VERSION]["N"]), indexes, expires)

    # -- reads -------------------------------------------------------------------------------

    @_answering
    def get(self, pk: str, sk: str) -> Item | None:
        resp = self._client.get_item(TableName=self.table_name, Key=self._key(pk, sk), ConsistentRead=True)
        raw = resp.get("Item")
        return self._decode(raw) if raw else None

    @_answering
    def get_many(self, keys: Sequence[tuple[str, str]]) -> list[Item]:
        # BatchGetItem refuses duplicate keys in one request; ask once, answer for every occurrence
        # (as the SQLite adapter does).
        unique = list(dict.fromkeys((pk, sk) for pk, sk in keys))
        found: dict[tuple[str, str], Item] = {}
        for start in range(0, len(unique), BATCH_GET_MAX):
            pending: list[RawItem] = [self._key(pk, sk) for pk, sk in unique[start : start + BATCH_GET_MAX]]
            attempt = 0
            while pending:
                if attempt == GET_MANY_ROUNDS:
                    raise _unavailable("the table is busy (reads left unprocessed)")
                resp = self._client.batch_get_item(
                    RequestItems={self.table_name: {"Keys": pending, "ConsistentRead": True}}
                )
                for raw in resp.get("Responses", {}).get(self.table_name, []):
                    item = self._decode(raw)
                    found[(item.pk, item.sk)] = item
                unprocessed = resp.get("UnprocessedKeys", {}).get(self.table_name)
                pending = list(unprocessed["Keys"]) if unprocessed else []
                if pending:  # throttled or over the response size: back off, ask for the rest
                    self._sleep(_backoff(min(attempt, 4)))
                    attempt += 1
        return [found[(pk, sk)] for pk, sk in keys if (pk, sk) in found]

    @_answering
    def query(
        self,
        pk: str,
        *,
        sk_prefix: str = "",
        limit: int = 50,
        cursor: str | None = None,
        descending: bool = False,
    ) -> Page:
        _check_limit(limit)
        start: RawItem | None = None
        if cursor:
            last = cursors.decode(cursor).get("sk")
            # A cursor this query returned names an item it returned, so it matches the prefix;
            # DynamoDB rejects a start key outside the key condition, so refuse it here alike.
            if not isinstance(last, str) or not last.startswith(sk_prefix):
                raise invalid("cursor is not one this server returned")
            start = self._key(pk, last)
        params: QueryInputTypeDef = {
            "TableName": self.table_name,
            "ConsistentRead": True,
            "ScanIndexForward": not descending,
            "ExpressionAttributeNames": {"#pk": PK},
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "KeyConditionExpression": "#pk = :pk",
        }
        if sk_prefix:  # begins_with(SK, "") is refused by DynamoDB; no prefix means no SK condition
            params["KeyConditionExpression"] = "#pk = :pk AND begins_with(#sk, :p)"
            params["ExpressionAttributeNames"] = {"#pk": PK, "#sk": SK}
            params["ExpressionAttributeValues"] = {":pk": {"S": pk}, ":p": {"S": sk_prefix}}
        return self._page(params, start, limit, None, lambda it: {"sk": it.sk})

    @_answering
    def query_index(
        self,
        index: IndexName,
        pk: str,
        *,
        sk_prefix: str = "",
        sk_lt: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        descending: bool = False,
    ) -> Page:
        _check_limit(limit)
        attr_pk, attr_sk = INDEX_ATTRS[index]
        start: RawItem | None = None
        if cursor:
            pos = cursors.decode(cursor)
            isk, item_pk, item_sk = pos.get("isk"), pos.get("pk"), pos.get("sk")
            if not (isinstance(isk, str) and isinstance(item_pk, str) and isinstance(item_sk, str)):
                raise invalid("cursor is not one this server returned")
            if not isk.startswith(sk_prefix) or (sk_lt is not None and not isk < sk_lt):
                raise invalid("cursor is not one this server returned")
            # A GSI's LastEvaluatedKey holds the index key and the table key (ties are broken by it).
            start = {attr_pk: {"S": pk}, attr_sk: {"S": isk}, PK: {"S": item_pk}, SK: {"S": item_sk}}

        # A key condition allows one predicate on the sort key, and a filter expression may not
        # name a key attribute. With both sk_prefix and sk_lt, the matching sort keys are
        # [sk_prefix, sk_lt) intersected with "starts with sk_prefix":
        # - sk_lt <= sk_prefix: nothing matches (below).
        # - sk_lt does not start with sk_prefix (so it lies above every such key): begins_with only.
        # - sk_lt starts with sk_prefix: ascending, query begins_with and stop at the first key
        #   >= sk_lt; descending, query "< sk_lt" and stop at the first key without the prefix.
        #   Either way the results are contiguous in the read order, so stopping at the first
        #   miss is exact and reads at most one item more than needed.
        condition = "#ipk = :pk"
        values: dict[str, AttributeValueTypeDef] = {":pk": {"S": pk}}
        stop: Callable[[RawItem], bool] | None = None
        use_prefix = bool(sk_prefix)
        lt = sk_lt
        if sk_lt is not None and sk_lt <= sk_prefix:
            # every key with the prefix is >= sk_prefix >= sk_lt (this also spares DynamoDB an
            # empty string in the key condition, which it refuses)
            return Page([], None)
        if sk_prefix and sk_lt is not None:
            if not sk_lt.startswith(sk_prefix):
                lt = None
            elif descending:
                use_prefix = False

                def stop(raw: RawItem) -> bool:
                    return not raw[attr_sk]["S"].startswith(sk_prefix)
            else:
                lt = None
                bound = sk_lt

                def stop(raw: RawItem) -> bool:
                    return raw[attr_sk]["S"] >= bound

        if use_prefix:
            condition += " AND begins_with(#isk, :p)"
            values[":p"] = {"S": sk_prefix}
        elif lt is not None:
            condition += " AND #isk < :lt"
            values[":lt"] = {"S": lt}
        params: QueryInputTypeDef = {
            "TableName": self.table_name,
            "IndexName": index.value,
            "ScanIndexForward": not descending,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": (
                {"#ipk": attr_pk, "#isk": attr_sk} if use_prefix or lt is not None else {"#ipk": attr_pk}
            ),
            "ExpressionAttributeValues": values,
        }

        def position(it: Item) -> dict[str, Any]:
            return {"isk": it.indexes[index][1], "pk": it.pk, "sk": it.sk}

        return self._page(params, start, limit, stop, position)

    @_answering
    def query_index_keys(self, index: IndexName, pk: str, *, limit: int = 50) -> list[IndexKey]:
        _check_limit(limit)
        attr_pk, attr_sk = INDEX_ATTRS[index]
        params: QueryInputTypeDef = {
            "TableName": self.table_name,
            "IndexName": index.value,
            "KeyConditionExpression": "#ipk = :pk",
            "ProjectionExpression": "#pk, #sk, #isk",
            "ExpressionAttributeNames": {"#ipk": attr_pk, "#isk": attr_sk, "#pk": PK, "#sk": SK},
            "ExpressionAttributeValues": {":pk": {"S": pk}},
        }
        keys: list[IndexKey] = []
        while len(keys) < limit:
            request: QueryInputTypeDef = {**params, "Limit": limit - len(keys)}
            resp = self._client.query(**request)
            keys += [IndexKey(r[PK]["S"], r[SK]["S"], r[attr_sk]["S"]) for r in resp.get("Items", [])]
            if "LastEvaluatedKey" not in resp:
                break
            params["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        return keys

    def _page(
        self,
        params: QueryInputTypeDef,
        start: RawItem | None,
        limit: int,
        stop: Callable[[RawItem], bool] | None,
        position: Callable[[Item], dict[str, Any]],
    ) -> Page:
        """Read until limit + 1 matches, the end, or a stop: so the cursor is None iff nothing follows.

        DynamoDB returns a LastEvaluatedKey whenever it stops at Limit (even if nothing follows)
        and may stop early at 1 MB; asking for one item more and looping hides both."""
        from_cursor = start is not None
        rows: list[RawItem] = []
        done = False
        while not done:
            request: QueryInputTypeDef = {**params, "Limit": limit + 1 - len(rows)}
            if start is not None:
                request["ExclusiveStartKey"] = start
            try:
                resp = self._client.query(**request)
            except ClientError as exc:
                if from_cursor and _error_code(exc) == "ValidationException":
                    raise invalid("cursor is not one this server returned") from exc
                raise
            for raw in resp.get("Items", []):
                if stop is not None and stop(raw):
                    done = True
                    break
                rows.append(raw)
            last_key = resp.get("LastEvaluatedKey")
            start = last_key if last_key else None
            done = done or start is None or len(rows) > limit
        items = [self._decode(raw) for raw in rows[:limit]]
        more = len(rows) > limit
        return Page(items, cursors.encode(position(items[-1])) if more else None)

    # -- the one write primitive -------------------------------------------------------------

    @_answering
    def commit(self, ops: Sequence[Op]) -> None:
        validate_ops(ops)
        if len(ops) == 1 and isinstance(ops[0], Check):
            # A lone Check writes nothing, so it is one strongly consistent read at this moment:
            # GetItem costs 1 read unit (<= 4 KB) at single-item latency, where a one-item
            # TransactWriteItems ConditionCheck costs 2 write units at about 3x the latency,
            # and answers the same question.
            op = ops[0]
            current = self.get(op.pk, op.sk)
            if (
                current is None
                or current.version != op.expected_version
                or lapsed(current.expires, op.alive_at)
            ):
                raise ConflictError([(op.pk, op.sk)])
            return
        if len(ops) == 1:
            self._with_conflict_retry(lambda: self._write_one(ops[0]), [key_of(ops[0])])
        else:
            self._with_conflict_retry(lambda: self._transact(ops), [key_of(op) for op in ops])

    def _with_conflict_retry(self, attempt: Callable[[], T], keys: list[tuple[str, str]]) -> T:
        """A clash with another in-flight transaction is a lost race: ConflictError, which the
        service's retry policy answers (running the use case again on fresh reads)."""
        try:
            return attempt()
        except _TransactionConflict as exc:
            raise ConflictError(exc.keys or keys, reason="transaction conflict") from exc

    def _write_one(self, op: Op) -> None:
        """One Put or Delete as a single conditional PutItem / DeleteItem.

        PutItem replaces the whole item, which is what Put means: index attributes an item no
        longer has disappear with it (and it costs the same as an UpdateItem)."""
        key = key_of(op)
        try:
            if isinstance(op, Put):
                self._client.put_item(
                    TableName=self.table_name,
                    Item=self._encode(op.item),
                    **_condition(op.expected_version, op.alive_at),
                )
            elif isinstance(op, Delete):
                self._client.delete_item(
                    TableName=self.table_name,
                    Key=self._key(op.pk, op.sk),
                    **_condition(op.expected_version, op.alive_at),
                )
            else:  # pragma: no cover - validate_ops and commit() route every other op elsewhere
                raise TypeError(f"not a single write: {op!r}")
        except ClientError as exc:
            code = _error_code(exc)
            if code == "ConditionalCheckFailedException":
                raise ConflictError([key]) from exc
            if code == "TransactionConflictException":  # the item is in another in-flight transaction
                raise _TransactionConflict([key]) from exc
            raise

    def _transact(self, ops: Sequence[Op]) -> None:
        items: list[TransactWriteItemTypeDef] = []
        for op in ops:
            body: dict[str, Any] = {
                "TableName": self.table_name,
                **_condition(op.expected_version, op.alive_at),
            }
            if isinstance(op, Put):
                body["Item"] = self._encode(op.item)
                kind = "Put"
            else:
                body["Key"] = self._key(op.pk, op.sk)
                kind = "Delete" if isinstance(op, Delete) else "ConditionCheck"
            items.append(cast("TransactWriteItemTypeDef", {kind: body}))
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as exc:
            if _error_code(exc) != "TransactionCanceledException":
                raise
            # One reason per op, in order: "None", "ConditionalCheckFailed", "TransactionConflict", ...
            reasons = exc.response.get("CancellationReasons") or []
            codes = [str(reason.get("Code", "None")) for reason in reasons]
            if len(codes) != len(ops):
                raise
            failed = [
                key_of(op) for op, code in zip(ops, codes, strict=True) if code == "ConditionalCheckFailed"
            ]
            if failed:
                raise ConflictError(failed) from exc
            clashed = [
                key_of(op) for op, code in zip(ops, codes, strict=True) if code == "TransactionConflict"
            ]
            if clashed and all(code in ("None", "TransactionConflict") for code in codes):
                raise _TransactionConflict(clashed) from exc
            raise  # throttling, validation, size limits: not a conflict


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= 1000:
        raise invalid("limit must be between 1 and 1000")

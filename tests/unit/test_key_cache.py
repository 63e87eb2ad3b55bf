"""The key cache's own rules: a forget wins over a lookup that read the key before it, entries
lapse after the TTL, and only the store they were read from sees them."""

from __future__ import annotations

from taskgate.domain.principals import Principal, PrincipalKind
from taskgate.service.key_cache import KeyCache


def _agent(cred: str) -> Principal:
    return Principal(PrincipalKind.AGENT, "a", cred)


def test_a_remembered_key_is_found_until_its_ttl_ends() -> None:
    now = [100.0]
    cache = KeyCache(ttl_s=30, clock=lambda: now[0])
    cache.put(1, "d1", _agent("key_1"), cache.generation())
    assert cache.get(1, "d1") == _agent("key_1")
    assert cache.get(2, "d1") is None  # another store
    now[0] += 29.9
    assert cache.get(1, "d1") is not None
    now[0] += 0.1
    assert cache.get(1, "d1") is None


def test_forget_drops_the_key_and_a_lookup_that_read_before_it_cannot_put_it_back() -> None:
    cache = KeyCache()
    cache.put(1, "d1", _agent("key_1"), cache.generation())
    cache.put(1, "d2", _agent("key_2"), cache.generation())
    before = cache.generation()  # a lookup reads the key (still live) here ...
    cache.forget("key_1")  # ... a revoke commits and forgets ...
    cache.put(1, "d1", _agent("key_1"), before)  # ... and the lookup's answer comes too late
    assert cache.get(1, "d1") is None
    assert cache.get(1, "d2") == _agent("key_2")  # other keys stay
    cache.put(1, "d1", _agent("key_1"), cache.generation())
    assert cache.get(1, "d1") is not None

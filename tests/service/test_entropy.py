"""Where the services draw randomness: the context's source, the OS's unless a test seeds one."""

from __future__ import annotations

from pathlib import Path

from taskgate.domain.entropy import SeededEntropy, SystemEntropy
from taskgate.domain.models import AgentRole, CredentialKind
from taskgate.service import keys
from taskgate.service.context import Context
from taskgate.store.sqlite import SQLiteStore
from tests.support.world import World


def _minted(tmp_path: Path, name: str, entropy: SeededEntropy | None) -> tuple[str, str]:
    store = SQLiteStore(tmp_path / f"{name}.db")
    try:
        world = World(store)
        if entropy is not None:
            world.ctx.entropy = entropy
        minted = keys.create(
            world.ctx, world.human, kind=CredentialKind.AGENT, name="e1", role=AgentRole.EXECUTOR
        )
        return minted.credential.id, minted.secret
    finally:
        store.close()


def test_in_use_the_context_draws_from_the_os(tmp_path: Path) -> None:
    assert isinstance(Context(SQLiteStore(tmp_path / "x.db")).entropy, SystemEntropy)
    a, b = _minted(tmp_path, "a", None), _minted(tmp_path, "b", None)
    assert a[0] != b[0] and a[1] != b[1]
    # tga_<12 hex of the id>_<24 random bytes: 32 base64url characters>
    assert len(a[1]) == len("tga_") + 12 + 1 + 32


def test_a_seed_makes_the_same_keys_and_another_seed_others(tmp_path: Path) -> None:
    first = _minted(tmp_path, "s1", SeededEntropy(7))
    again = _minted(tmp_path, "s2", SeededEntropy(7))
    other = _minted(tmp_path, "s3", SeededEntropy(8))
    assert first == again
    assert first[0] != other[0] and first[1] != other[1]
    assert keys.secrets.key_id_of(first[1]) == first[0]


def test_seeded_tokens_have_the_os_tokens_shape() -> None:
    seeded, system = SeededEntropy(1), SystemEntropy()
    for n in (3, 6, 24):
        assert len(seeded.token_hex(n)) == len(system.token_hex(n)) == 2 * n
        assert len(seeded.token_urlsafe(n)) == len(system.token_urlsafe(n))
    assert seeded.token_urlsafe(24).replace("-", "").replace("_", "").isalnum()
    assert SeededEntropy(3).choice(range(1000)) == SeededEntropy(3).choice(range(1000))

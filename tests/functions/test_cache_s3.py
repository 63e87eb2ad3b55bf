"""The S3 dependency cache (verifier/cache_s3.py) on moto: a tree saved under a key comes back
as it was (links, modes), a missing key is a miss, a bad key or a hostile object changes nothing
outside the directory restored into."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from taskgate.verifier import cache_s3
from taskgate.verifier.cache_s3 import CacheKeyError, S3CacheStore
from tests.support.dynamo import REGION, _fake_aws_env, _session

BUCKET = "taskgate-cache-test"


@pytest.fixture
def s3() -> Iterator[Any]:
    with _fake_aws_env(), mock_aws():
        client = _session().client("s3", region_name=REGION)
        client.create_bucket(Bucket=BUCKET)
        yield client


def _objects(s3: Any) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def _venv(root: Path) -> Path:
    """A tree shaped like a virtualenv: nested files, an executable, an absolute symlink."""
    (root / "bin").mkdir(parents=True)
    (root / "lib" / "site-packages" / "parse").mkdir(parents=True)
    (root / "lib" / "site-packages" / "parse" / "__init__.py").write_text("VERSION = '1.20'\n")
    runner = root / "bin" / "pytest"
    runner.write_text("#!/bin/sh\necho real\n")
    runner.chmod(0o755)
    (root / "bin" / "python").symlink_to("/usr/bin/python3")
    return root


def test_a_saved_tree_is_restored_as_it_was(s3: Any, tmp_path: Path) -> None:
    cache = S3CacheStore(BUCKET, s3)
    cache.save("pip-3f2a", _venv(tmp_path / "src" / ".venv"))
    assert _objects(s3) == ["cache/pip-3f2a.tar.gz"]
    into = tmp_path / "checkout" / ".venv"
    assert cache.restore("pip-3f2a", into) is True
    assert (into / "lib" / "site-packages" / "parse" / "__init__.py").read_text() == "VERSION = '1.20'\n"
    assert os.access(into / "bin" / "pytest", os.X_OK)
    assert os.readlink(into / "bin" / "python") == "/usr/bin/python3"  # a venv's interpreter link survives


def test_a_missing_key_is_a_miss_and_makes_nothing(s3: Any, tmp_path: Path) -> None:
    into = tmp_path / "checkout" / ".venv"
    assert S3CacheStore(BUCKET, s3).restore("never-saved", into) is False
    assert not into.exists()


def test_saving_again_replaces_the_tree(s3: Any, tmp_path: Path) -> None:
    cache = S3CacheStore(BUCKET, s3)
    old = tmp_path / "old"
    old.mkdir()
    (old / "stale.txt").write_text("old")
    cache.save("k", old)
    new = tmp_path / "new"
    new.mkdir()
    (new / "fresh.txt").write_text("new")
    cache.save("k", new)
    into = tmp_path / "into"
    assert cache.restore("k", into) is True
    assert sorted(p.name for p in into.iterdir()) == ["fresh.txt"]


@pytest.mark.parametrize("key", ["../escape", "a/b", "", ".hidden", "x" * 201, "key with space"])
def test_a_key_that_is_not_one_object_name_is_refused_and_nothing_is_written(
    s3: Any, tmp_path: Path, key: str
) -> None:
    cache = S3CacheStore(BUCKET, s3)
    with pytest.raises(CacheKeyError, match="must match"):
        cache.save(key, _venv(tmp_path / "v"))
    with pytest.raises(CacheKeyError, match="must match"):
        cache.restore(key, tmp_path / "into")
    assert _objects(s3) == []
    assert not (tmp_path / "into").exists()


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def test_an_object_reaching_outside_the_directory_is_refused(s3: Any, tmp_path: Path) -> None:
    """Only the verifier task's role may write the bucket; should an object still hold a member
    that climbs out (or a link that leads out, then a file through it), nothing lands outside."""
    escape = tarfile.TarInfo("../outside.txt")
    escape.size = 2
    s3.put_object(Bucket=BUCKET, Key="cache/climb.tar.gz", Body=_tar([(escape, b"hi")]))
    link = tarfile.TarInfo("out")
    link.type, link.linkname = tarfile.SYMTYPE, str(tmp_path)
    through = tarfile.TarInfo("out/through.txt")
    through.size = 2
    s3.put_object(Bucket=BUCKET, Key="cache/link.tar.gz", Body=_tar([(link, None), (through, b"hi")]))
    cache = S3CacheStore(BUCKET, s3)
    into = tmp_path / "checkout" / ".venv"
    with pytest.raises(tarfile.FilterError):
        cache.restore("climb", into)
    with pytest.raises(tarfile.FilterError):
        cache.restore("link", into)
    assert not (tmp_path / "checkout" / "outside.txt").exists()
    assert not (tmp_path / "through.txt").exists()


def test_no_setuid_bit_survives_a_restore(s3: Any, tmp_path: Path) -> None:
    setuid = tarfile.TarInfo("bin/tool")
    setuid.size, setuid.mode = 3, 0o4755
    s3.put_object(Bucket=BUCKET, Key="cache/suid.tar.gz", Body=_tar([(setuid, b"x\n\n")]))
    into = tmp_path / "into"
    assert S3CacheStore(BUCKET, s3).restore("suid", into) is True
    mode = (into / "bin" / "tool").stat().st_mode
    assert not mode & stat.S_ISUID and mode & stat.S_IXUSR


def test_the_container_picks_it_from_its_environment_with_explicit_timeouts(s3: Any) -> None:
    assert cache_s3.from_env({}) is None
    assert cache_s3.from_env({"TASKGATE_CACHE_BUCKET": "  "}) is None
    made = cache_s3.from_env({"TASKGATE_CACHE_BUCKET": BUCKET, "AWS_REGION": REGION})
    assert made is not None and made.bucket == BUCKET
    config = made.client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (5, 60)
    assert config.retries == {"mode": "standard", "total_max_attempts": 5}  # 4 retries after the first


def test_a_verifier_with_the_bucket_set_keeps_its_caches_there(s3: Any, tmp_path: Path) -> None:
    from taskgate.verifier.worker import Options, Worker

    env = {cache_s3.BUCKET_VAR: BUCKET}
    store = cache_s3.from_env(env, client=s3)
    assert store is not None and cache_s3.from_env({}, client=s3) is None
    worker = Worker(Options(server="http://127.0.0.1:9", verifier_key="k", cache_store=store), env={})
    assert worker.cache is store
    worker.cache.save("k1", _venv(tmp_path / "venv"))
    assert _objects(s3) == ["cache/k1.tar.gz"]
    # TASKGATE_VERIFIER_CACHE=off turns caches off wherever they would be kept
    off = Worker(Options(server="http://127.0.0.1:9", verifier_key="k", cache_dir=None, cache_store=store))
    assert off.cache is None

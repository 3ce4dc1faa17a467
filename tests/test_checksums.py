"""Summaries' files are hashed once per version, not once per reading job, and a changed file is still caught."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rankscale.atomic import checksum_matches, remember_checksum, sha256_file


def test_a_file_is_hashed_once_and_any_change_is_caught(tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "checksums.json"
    path = tmp_path / "boot.npz"
    path.write_bytes(b"a" * 1000)
    checksum = sha256_file(path)
    remember_checksum(path, checksum, cache)

    hashed = []
    import rankscale.atomic as atomic

    real = atomic.sha256_file
    monkeypatch.setattr(atomic, "sha256_file", lambda p: hashed.append(p) or real(p))
    assert checksum_matches(path, checksum, cache) and hashed == []  # the writer's record: no hash needed
    assert not checksum_matches(path, "0" * 64, cache)  # another checksum: hashed, and refused
    assert hashed == [path]

    # the same size, and the modification time put back (a copy with `cp -p`, `touch -r`): still hashed again
    stat = path.stat()
    time.sleep(0.01)
    path.write_bytes(b"b" * 1000)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert not checksum_matches(path, checksum, cache)
    assert len(hashed) == 2

    # a damaged cache is only a cache
    cache.write_text("{not json")
    assert checksum_matches(path, sha256_file(path), cache)

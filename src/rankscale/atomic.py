"""Write outputs under a temporary name and rename them into place.

A job killed half-way must never leave a file that looks complete (docs/troubleshooting.md).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import glob
import hashlib
import json
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np


@functools.cache
def _umask() -> int:
    """The process umask (read once: os.umask can only be read by setting it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _honour_umask(path: Path) -> None:
    """The mode open()/mkdir would have given: 0666 (0777 for directories and executables) less the umask."""
    full = 0o777 if path.is_dir() or path.stat().st_mode & 0o100 else 0o666
    os.chmod(path, full & ~_umask())


def _temp_pattern(target: Path, suffix: str) -> re.Pattern[str]:
    """Names `tempfile` gives our temporaries of `target`: `.{name}.{8 random chars}.tmp{suffix}`."""
    return re.compile(rf"\.{re.escape(target.name)}\.[a-z0-9_]{{8}}\.tmp{re.escape(suffix)}")


def _remove_stale(target: Path, suffix: str) -> None:
    """Remove temporaries of `target` left by a killed job.

    Snakemake never runs two jobs for one output at once, so any such sibling is stale.
    """
    pattern = _temp_pattern(target, suffix)
    for sibling in target.parent.glob(f".{glob.escape(target.name)}.*.tmp*"):
        if pattern.fullmatch(sibling.name):
            if sibling.is_dir() and not sibling.is_symlink():
                shutil.rmtree(sibling, ignore_errors=True)
            else:
                sibling.unlink(missing_ok=True)


@contextlib.contextmanager
def _naming(target: Path) -> Iterator[None]:
    """A write that fails for want of room (ENOSPC, EFBIG from a file size limit, EDQUOT) names the output it was
    writing: the OSError from inside a writer (numpy, zipfile, safetensors) names the temporary, or nothing."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            raise
        raise OSError(exc.errno, f"{target}: could not be written ({exc.strerror}); left as it was") from exc


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], suffix: str = "") -> Iterator[Path]:
    """Yield a temporary sibling of `path`; rename it onto `path` only on success.

    mkstemp creates the file 0600: it gets the mode a plain open() would give (0666 less the
    umask) before the rename, so colleagues on a shared file system can read outputs.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(target, suffix)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp" + suffix, dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        with _naming(target):
            yield tmp_path
            _honour_umask(tmp_path)
            os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary sibling directory; rename it onto `path` only on success.

    mkdtemp creates the directory 0700: it gets 0777 less the umask, like os.mkdir, and so does
    everything inside (some writers, e.g. safetensors shards, also go through 0600 temporaries).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(target, "")
    tmp_path = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        with _naming(target):
            yield tmp_path
            for item in (tmp_path, *tmp_path.rglob("*")):
                if not item.is_symlink():
                    _honour_umask(item)
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            shutil.rmtree(tmp_path)


def json_text(obj: Any) -> str:
    """`obj` as `write_json` writes it: indented, key-sorted JSON (numpy values as plain numbers and lists)."""
    return json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n"


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Atomically write `obj` as indented, key-sorted JSON."""
    with atomic_path(path) as tmp:
        tmp.write_text(json_text(obj))


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def write_npz(path: str | os.PathLike[str], **arrays: np.ndarray) -> None:
    """Atomically write an uncompressed .npz whose bytes depend only on the arrays.

    `np.savez` stamps each zip entry with the current time, so identical arrays would
    give different files (and different checksums for DVC and the determinism checks).
    """
    with atomic_path(path, suffix=".npz") as tmp:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
            for name, array in arrays.items():
                info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                with archive.open(info, "w", force_zip64=True) as fh:
                    np.lib.format.write_array(fh, np.asanyarray(array), allow_pickle=False)


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


CHECKSUMS = Path(".snakemake") / "rankscale" / "checksums.json"  # in the working directory, beside Snakemake's own


def _stamp(path: Path) -> list[int]:
    """What changes whenever a file's bytes do: size, modification and status-change times, inode (a copy that
    keeps the modification time still gets a new status-change time, which no tool can set). On a file system
    that keeps times to the second only, a same-size rewrite within the second of the recorded stamp would
    pass unseen: the summaries live under results/, written by jobs seconds apart."""
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _known_checksums(cache: Path) -> dict[str, list]:
    try:
        return json.loads(cache.read_text())
    except (OSError, ValueError):
        return {}  # none yet, or a damaged cache: it is only a cache


def remember_checksum(path: str | os.PathLike[str], checksum: str, cache: Path = CHECKSUMS) -> None:
    """Record that this version of `path` has `checksum` (its writer just computed it), so readers need not hash it."""
    path = Path(path)
    known = _known_checksums(cache)  # read just before writing: jobs at once lose at most an entry, not the file
    known[str(path.resolve())] = [_stamp(path), checksum]
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(known, sort_keys=True))
    os.replace(tmp, cache)


def checksum_matches(path: str | os.PathLike[str], checksum: str, cache: Path = CHECKSUMS) -> bool:
    """sha256_file(path) == checksum, hashing the file only the first time this version of it is checked: every
    table and figure job reads the same summaries, which used to be hashed once per job."""
    path = Path(path)
    entry = _known_checksums(cache).get(str(path.resolve()))
    if entry is not None and entry == [_stamp(path), checksum]:
        return True
    if sha256_file(path) != checksum:
        return False
    remember_checksum(path, checksum, cache)
    return True


def sha256_dir(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 over a directory's relative file names and contents (sorted)."""
    root = Path(path)
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(root)).encode())
        digest.update(sha256_file(file).encode())
    return digest.hexdigest()

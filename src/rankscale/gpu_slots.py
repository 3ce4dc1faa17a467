"""One GPU per extraction job on a machine with several: a slot (a lock) per device.

Snakemake's `--resources gpu=N` caps how many jobs that declare GPUs run at once, but it tells no job which
devices are its own: every job would load onto cuda:0. An extraction job on CUDA therefore claims as many
free devices as its `gpus:` says, by locking a file named for each device's UUID, and holds them until its
process ends; the operating system releases the locks even if the job is killed. A job takes all of its
devices at once or none (it never holds some while it waits for others), so jobs that want several cannot
block each other. Locks are per physical device (the UUID), so jobs that a scheduler confines to their own
devices with CUDA_VISIBLE_DEVICES (SLURM) never wait for each other, and they live in this machine's
temporary directory, shared by its users, not on a shared file system.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

LOCK_DIR = Path(tempfile.gettempdir()) / "rankscale-gpu-slots"
POLL_S = 2.0


@dataclass
class Slot:
    """A device this process holds: its index among the visible devices, and the open, locked file."""

    index: int
    device_id: str
    handle: IO[str]

    def release(self) -> None:
        self.handle.close()  # closing the file drops the lock


def _lock_dir(lock_dir: Path) -> Path:
    """The shared lock directory (sticky and writable by all, as /tmp is), or a private one beside it if
    another user's directory cannot be used."""
    try:
        lock_dir.mkdir()
        os.chmod(lock_dir, 0o1777)  # only the user who created it may (and does) open it to all
    except FileExistsError:
        pass
    if os.access(lock_dir, os.W_OK | os.X_OK):
        return lock_dir
    private = lock_dir.with_name(f"{lock_dir.name}-{os.getuid()}")
    private.mkdir(mode=0o700, exist_ok=True)
    log.warning("%s is not writable: GPU slots in %s, which other users' jobs do not see", lock_dir, private)
    return private


def _try_lock(path: Path) -> IO[str] | None:
    """The locked file, or None if another process holds it (or it is another user's and not ours to open)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:
        return None
    if os.fstat(fd).st_uid == os.getuid():
        os.fchmod(fd, 0o666)  # whoever comes next, of any user, may lock it too (despite our umask)
    handle = os.fdopen(fd, "r+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.close()
        if exc.errno in (errno.EWOULDBLOCK, errno.EACCES):
            return None
        raise
    handle.truncate(0)
    handle.write(f"{os.getpid()} {time.time():.0f}\n")  # for a person who looks: who holds it
    handle.flush()
    return handle


def claim(device_ids: Sequence[str], count: int = 1, lock_dir: Path = LOCK_DIR, poll_s: float = POLL_S) -> list[Slot]:
    """Lock `count` free devices of `device_ids`, all at once (waiting, holding none, while fewer are free)."""
    if not 1 <= count <= len(device_ids):
        raise ValueError(f"a job asks for {count} GPU(s), but this machine shows {len(device_ids)}: {device_ids}")
    folder = _lock_dir(lock_dir)
    while True:
        held: list[Slot] = []
        for index, device_id in enumerate(device_ids):
            handle = _try_lock(folder / f"{device_id}.lock")
            if handle is not None:
                held.append(Slot(index, device_id, handle))
                if len(held) == count:
                    return held
        for slot in held:
            slot.release()
        time.sleep(poll_s)


def cuda_device_ids() -> list[str]:
    """The visible CUDA devices' UUIDs, in torch's index order."""
    import torch

    return [f"GPU-{torch.cuda.get_device_properties(i).uuid}" for i in range(torch.cuda.device_count())]

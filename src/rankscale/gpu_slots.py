"""One GPU per extraction job on a machine with several: a slot (a lock) per device.

Snakemake's `--resources gpu=N` caps how many jobs that declare a GPU run at once, but it tells no job
which device is its own: every job would load onto cuda:0. A job whose device is `auto` or `cuda` (no index,
no `device_map`) therefore claims a free device by locking a file named for the device's UUID, and holds
it until the job's process ends; the operating system releases the lock even if the job is killed.
Locks are per physical device (the UUID), so jobs that a scheduler confines to their own devices with
CUDA_VISIBLE_DEVICES (SLURM) never wait for each other, and they live in this machine's temporary directory,
not on a shared file system.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

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


def claim(device_ids: Sequence[str], lock_dir: Path = LOCK_DIR, poll_s: float = POLL_S) -> Slot:
    """Lock the first free device of `device_ids` (waiting while all are held) and return it."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(lock_dir, 0o1777)  # shared by every user's jobs on this machine, like /tmp itself
    while True:
        for index, device_id in enumerate(device_ids):
            path = lock_dir / f"{device_id}.lock"
            handle = path.open("a")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            handle.write(f"{os.getpid()} {time.time():.0f}\n")  # for a person who looks: who holds it
            handle.flush()
            return Slot(index, device_id, handle)
        time.sleep(poll_s)


def cuda_device_ids() -> list[str]:
    """The visible CUDA devices' UUIDs, in torch's index order."""
    import torch

    return [f"GPU-{torch.cuda.get_device_properties(i).uuid}" for i in range(torch.cuda.device_count())]

"""Several extraction jobs on one multi-GPU machine each get a device of their own (simulated devices, on CPU)."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from rankscale.gpu_slots import claim

DEVICES = [f"GPU-{i:08x}-sim" for i in range(3)]  # three simulated devices, named as CUDA names them (UUIDs)


def job(lock_dir: str, hold_s: float, out: multiprocessing.Queue) -> None:
    started = time.monotonic()
    slot = claim(DEVICES, Path(lock_dir), poll_s=0.05)
    got = time.monotonic()
    time.sleep(hold_s)
    out.put((slot.index, started, got, time.monotonic()))
    # the process ends without releasing: the operating system drops the lock, as for a killed job


def test_concurrent_jobs_hold_distinct_devices_and_a_fourth_waits_for_one(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    jobs = [context.Process(target=job, args=(str(tmp_path), 1.5, out)) for _ in range(4)]
    for process in jobs:
        process.start()
    for process in jobs:
        process.join(timeout=60)
        assert process.exitcode == 0
    held = sorted((out.get() for _ in jobs), key=lambda r: r[2])
    # every two jobs that held a device at the same time held different ones
    for i, (index, _, got, done) in enumerate(held):
        for other, _, got2, done2 in held[i + 1 :]:
            if got2 < done and got < done2:
                assert index != other, held
    assert len({index for index, *_ in held[:3]}) == 3  # the first three took all three devices
    # the fourth waited until a device was free (released when its holder's process ended)
    fourth = held[3]
    assert fourth[2] >= min(done for _, _, _, done in held[:3]) - 0.05, held
    assert fourth[2] - fourth[1] > 0.5, held


def test_a_released_device_is_claimed_again(tmp_path: Path) -> None:
    first = claim(DEVICES, tmp_path)
    second = claim(DEVICES, tmp_path)
    assert (first.index, second.index) == (0, 1)
    first.release()
    assert claim(DEVICES, tmp_path).index == 0

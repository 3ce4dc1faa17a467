"""Several extraction jobs on one multi-GPU machine each get a device of their own (simulated devices, on CPU)."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from rankscale.gpu_slots import claim

DEVICES = [f"GPU-{i:08x}-sim" for i in range(3)]  # three simulated devices, named as CUDA names them (UUIDs)


def job(lock_dir: str, hold_s: float, out: multiprocessing.Queue, start: multiprocessing.Barrier) -> None:
    start.wait(timeout=60)  # every job claims at once, however long each process took to start
    started = time.monotonic()
    [slot] = claim(DEVICES, 1, Path(lock_dir), poll_s=0.05)
    got = time.monotonic()
    time.sleep(hold_s)
    out.put((slot.index, started, got, time.monotonic()))
    # the process ends without releasing: the operating system drops the lock, as for a killed job


def test_concurrent_jobs_hold_distinct_devices_and_a_fourth_waits_for_one(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    out, start = context.Queue(), context.Barrier(4)
    jobs = [context.Process(target=job, args=(str(tmp_path), 0.8, out, start)) for _ in range(4)]
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
    [first] = claim(DEVICES, 1, tmp_path)
    [second] = claim(DEVICES, 1, tmp_path)
    assert (first.index, second.index) == (0, 1)
    first.release()
    assert claim(DEVICES, 1, tmp_path)[0].index == 0


def test_a_job_wanting_two_devices_takes_both_at_once_or_none(tmp_path: Path) -> None:
    """It never holds one device while it waits for another (two such jobs could otherwise wait forever)."""
    other = claim(DEVICES, 2, tmp_path)  # another job holds devices 0 and 1
    assert [s.index for s in other] == [0, 1]
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    waiting = context.Process(target=claim_two, args=(str(tmp_path), out))
    waiting.start()
    time.sleep(1.0)  # it is waiting for a second free device: device 2 must stay free meanwhile
    free = claim(DEVICES, 1, tmp_path, poll_s=0.05)
    assert [s.index for s in free] == [2]
    for slot in (*other, *free):
        slot.release()
    waiting.join(timeout=60)
    assert waiting.exitcode == 0 and out.get(timeout=10) == [0, 1]


def claim_two(lock_dir: str, out: multiprocessing.Queue) -> None:
    out.put([s.index for s in claim(DEVICES, 2, Path(lock_dir), poll_s=0.05)])


def test_more_devices_than_the_machine_has_is_refused(tmp_path: Path) -> None:
    import pytest

    with pytest.raises(ValueError, match=r"a job asks for 4 GPU\(s\), but this machine shows 3"):
        claim(DEVICES, 4, tmp_path)

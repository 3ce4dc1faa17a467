"""The calibration fields of the head's pass (rankscale.ranking.score_tokens) and of the rank file.

Against the definition (a float64 softmax of every row, tests/tolerances.py's bounds), at exact ties under
both tie rules, past padded columns, with bfloat16-rounded logits and with logits far apart; by hand on a row
small enough to write down; and the log-prob, which the same pass now computes, bit for bit as before.
Arrays made before the fields existed load with `calibration` None, never as zeros.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from rankscale.rankfile import (
    Calibration,
    RankArrays,
    RankFileError,
    has_calibration,
    load_rank_arrays,
    save_rank_arrays,
)
from rankscale.ranking import score_tokens
from tests.tolerances import assert_calibration_close, brute_force_calibration, calibration_tolerance


def _fields(logits: torch.Tensor, targets: torch.Tensor, vocab: int, ties: str) -> dict[str, np.ndarray]:
    scores = score_tokens(logits, targets, vocab, ties)  # type: ignore[arg-type]
    return {"mass_above": scores.mass_above.numpy(), "top1_logprob": scores.top1_logprob.numpy(),
            "entropy": scores.entropy.numpy()}  # fmt: skip


@pytest.mark.parametrize("ties", ["ge", "gt"])
@pytest.mark.parametrize("case", ["random", "twins", "bfloat16", "far_apart", "padded"])
def test_fields_equal_a_float64_softmax(case: str, ties: str) -> None:
    gen = torch.Generator().manual_seed(sum(map(ord, case + ties)))
    n, vocab, columns = 64, 3000, 3000
    logits = torch.randn(n, columns, generator=gen) * 3
    targets = torch.randint(0, vocab, (n,), generator=gen)
    if case == "twins":  # exact ties with the target: under ge the twin's mass is above it, under gt it is not
        logits[:, 0] = logits.gather(1, targets[:, None])[:, 0]
        targets[targets == 0] = 1
    if case == "bfloat16":  # a bfloat16 head's logits: exact ties everywhere
        logits = logits.to(torch.bfloat16).float()
    if case == "far_apart":  # one logit far above the rest: p near 1, the entropy near 0
        logits[:, 7] += 40
    if case == "padded":  # output columns past the vocabulary that would dominate every sum: never counted
        columns = vocab + 64
        logits = torch.cat([logits, torch.full((n, 64), 50.0)], dim=1)
    got = _fields(logits, targets, vocab, ties)
    real = logits[:, :vocab]
    assert_calibration_close(got, brute_force_calibration(real, targets, ties),
                             calibration_tolerance(real, targets, paths=1), f"{case}, {ties}")  # fmt: skip
    if case == "twins":
        twin = torch.softmax(real.double(), 1)[:, 0].numpy()
        gap = got["mass_above"] - _fields(logits, targets, vocab, "gt" if ties == "ge" else "ge")["mass_above"]
        np.testing.assert_allclose(np.abs(gap), twin, rtol=1e-5, atol=1e-6)  # the twin's mass apart (two float32 sums)


def test_a_row_by_hand() -> None:
    """logits (2, 1, 1, 0), target 1: above it under ge the 2 and the tied 1, under gt the 2 alone."""
    logits = torch.tensor([[2.0, 1.0, 1.0, 0.0]])
    target = torch.tensor([1])
    z = np.array([2.0, 1.0, 1.0, 0.0])
    p = np.exp(z) / np.exp(z).sum()
    ge, gt = _fields(logits, target, 4, "ge"), _fields(logits, target, 4, "gt")
    assert ge["mass_above"][0] == pytest.approx(p[0] + p[2], rel=1e-6)
    assert gt["mass_above"][0] == pytest.approx(p[0], rel=1e-6)
    assert ge["top1_logprob"][0] == pytest.approx(math.log(p[0]), rel=1e-6)
    assert ge["entropy"][0] == pytest.approx(-(p * np.log(p)).sum(), rel=1e-6)
    uniform = _fields(torch.zeros(1, 50), torch.tensor([3]), 50, "gt")
    assert uniform["entropy"][0] == pytest.approx(math.log(50), rel=1e-6)  # the largest entropy, log |V|
    assert uniform["mass_above"][0] == 0.0  # all tied, none strictly above


def test_log_prob_keeps_its_bits() -> None:
    """The log-prob comes from the exponentials the other fields share, in torch.logsumexp's own steps:
    the rank arrays' log-probs are bit-identical to the earlier `target - logsumexp`."""
    gen = torch.Generator().manual_seed(5)
    for n, vocab, scale in ((1, 10, 1.0), (37, 4096, 10.0), (16, 49152, 0.01), (300, 301, 3.0)):
        logits = torch.randn(n, vocab, generator=gen) * scale
        targets = torch.randint(0, vocab, (n,), generator=gen)
        before = logits.gather(1, targets[:, None])[:, 0] - torch.logsumexp(logits, dim=1)
        np.testing.assert_array_equal(score_tokens(logits, targets, vocab, "ge").logprob.numpy(), before.numpy())


def _arrays(n: int = 200, calibration: bool = True) -> RankArrays:
    rng = np.random.default_rng(3)
    floats = [rng.random(n).astype(np.float32) for _ in range(3)]
    return RankArrays(
        rank=rng.integers(1, 100, n).astype(np.uint32),
        logprob=-rng.exponential(2.0, n).astype(np.float32),
        doc=np.repeat(np.arange(4), n // 4).astype(np.uint32),
        pos=np.tile(np.arange(1, n // 4 + 1), 4).astype(np.uint32),
        target=rng.integers(0, 100, n).astype(np.uint32),
        calibration=Calibration(*floats) if calibration else None,
    )


def test_the_fields_round_trip_and_the_sidecar_lists_them(tmp_path: Path) -> None:
    arrays = _arrays()
    save_rank_arrays(arrays, tmp_path / "r.npz", tmp_path / "r.json", {"vocab_size": 100})
    loaded, meta = load_rank_arrays(tmp_path / "r.npz", tmp_path / "r.json")
    assert has_calibration(meta) and loaded.calibration is not None
    for name, value in arrays.as_dict().items():
        np.testing.assert_array_equal(loaded.as_dict()[name], value)


def test_an_older_array_loads_without_the_fields(tmp_path: Path) -> None:
    """An array from before the fields (no `fields` in its sidecar) serves rank and log-prob, calibration None."""
    save_rank_arrays(_arrays(calibration=False), tmp_path / "r.npz", tmp_path / "r.json", {"vocab_size": 100})
    meta = json.loads((tmp_path / "r.json").read_text())
    del meta["fields"]  # as the sidecars written before the key existed
    (tmp_path / "r.json").write_text(json.dumps(meta))
    loaded, meta = load_rank_arrays(tmp_path / "r.npz", tmp_path / "r.json")
    assert not has_calibration(meta) and loaded.calibration is None
    np.testing.assert_array_equal(loaded.rank, _arrays().rank)


def test_a_sidecar_that_lists_fields_the_array_lacks_is_refused(tmp_path: Path) -> None:
    save_rank_arrays(_arrays(calibration=False), tmp_path / "r.npz", tmp_path / "r.json", {"vocab_size": 100})
    meta = json.loads((tmp_path / "r.json").read_text())
    meta["fields"] += ["mass_above", "top1_logprob", "entropy"]
    (tmp_path / "r.json").write_text(json.dumps(meta))
    with pytest.raises(RankFileError, match=r"r\.npz.*mass_above"):
        load_rank_arrays(tmp_path / "r.npz", tmp_path / "r.json")


def test_a_logit_of_minus_infinity_weighs_nothing() -> None:
    """A column a model masks with -inf has probability 0: every field stays finite and equals the row without it."""
    gen = torch.Generator().manual_seed(9)
    logits = torch.randn(8, 50, generator=gen) * 2
    targets = torch.randint(0, 40, (8,), generator=gen)
    masked = logits.clone()
    masked[:, 45:] = float("-inf")
    for ties in ("ge", "gt"):
        got = _fields(masked, targets, 50, ties)
        assert all(np.isfinite(v).all() for v in got.values())
        want = _fields(logits[:, :45], targets, 45, ties)
        for name in got:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)

"""`rank_and_logprob` against brute-force, sort-based references (docs/science.md)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rankscale.config import load_schema
from rankscale.ranking import rank_and_logprob
from tests.tolerances import assert_logprobs_close, logprob_tolerance


def reference_rank(logits: np.ndarray, targets: np.ndarray, ties: str) -> np.ndarray:
    """Rank of each row's target by sorting the row (float64, so nothing is rounded).

    In an ascending sort, `searchsorted(side="left")` is the number of logits strictly below
    the target and `side="right"` the number at or below it, so
    ge: #{v: logit >= t} = V - left;   gt: #{v: logit > t} + 1 = V - right + 1.
    """
    out = np.empty(len(targets), dtype=np.int64)
    for i, (row, t) in enumerate(zip(logits.astype(np.float64), targets, strict=True)):
        s = np.sort(row, kind="stable")
        value = row[t]
        if ties == "ge":
            out[i] = row.size - np.searchsorted(s, value, side="left")
        else:
            out[i] = row.size - np.searchsorted(s, value, side="right") + 1
    return out


def loop_rank(row: list[float], t: int, ties: str) -> int:
    """The definition written out literally, for a handful of rows."""
    if ties == "ge":
        return sum(1 for v in row if v >= row[t])
    return sum(1 for v in row if v > row[t]) + 1


def test_sort_reference_matches_literal_definition() -> None:
    rng = np.random.default_rng(0)
    logits = rng.integers(-2, 3, size=(50, 9)).astype(np.float64)
    targets = rng.integers(0, 9, size=50)
    for ties in ("ge", "gt"):
        ref = reference_rank(logits, targets, ties)
        assert ref.tolist() == [loop_rank(r.tolist(), int(t), ties) for r, t in zip(logits, targets, strict=True)]


@pytest.mark.parametrize("ties", ["ge", "gt"])
@pytest.mark.parametrize("vocab", [1, 2, 17, 300])
def test_rank_random_float_logits(ties: str, vocab: int) -> None:
    g = torch.Generator().manual_seed(vocab)
    logits = torch.randn(64, vocab, generator=g) * 3
    targets = torch.randint(0, vocab, (64,), generator=g)
    rank, _ = rank_and_logprob(logits, targets, vocab, ties)  # type: ignore[arg-type]
    ref = reference_rank(logits.numpy(), targets.numpy(), ties)
    np.testing.assert_array_equal(rank.numpy(), ref)
    assert rank.min() >= 1 and rank.max() <= vocab


@pytest.mark.parametrize("levels", [2, 3, 7])
def test_rank_with_deliberate_ties(levels: int) -> None:
    """Logits from a small integer set: almost every target ties with other tokens."""
    g = torch.Generator().manual_seed(levels)
    vocab = 40
    logits = torch.randint(0, levels, (200, vocab), generator=g).float()
    targets = torch.randint(0, vocab, (200,), generator=g)
    ge, _ = rank_and_logprob(logits, targets, vocab, "ge")
    gt, _ = rank_and_logprob(logits, targets, vocab, "gt")
    np.testing.assert_array_equal(ge.numpy(), reference_rank(logits.numpy(), targets.numpy(), "ge"))
    np.testing.assert_array_equal(gt.numpy(), reference_rank(logits.numpy(), targets.numpy(), "gt"))
    # the conventions differ by exactly the number of other tokens tied with the target
    tied_others = (logits == logits.gather(1, targets[:, None])).sum(1) - 1
    np.testing.assert_array_equal((ge - gt).numpy(), tied_others.numpy())
    assert (tied_others > 0).all()


def test_default_convention_is_ge() -> None:
    """The paper's convention is the configured default (the code has none): ties count against the model."""
    assert load_schema()["properties"]["extraction"]["default"]["ties"] == "ge"
    logits = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    targets = torch.tensor([0])
    assert rank_and_logprob(logits, targets, 4, "ge")[0].item() == 3
    assert rank_and_logprob(logits, targets, 4, "gt")[0].item() == 1


@pytest.mark.parametrize("ties", ["ge", "gt"])
def test_padded_columns_are_ignored(ties: str) -> None:
    g = torch.Generator().manual_seed(1)
    vocab, columns = 50, 64
    real = torch.randn(32, vocab, generator=g)
    targets = torch.randint(0, vocab, (32,), generator=g)
    padded = torch.cat([real, torch.full((32, columns - vocab), 1e30)], dim=1)
    rank, logprob = rank_and_logprob(padded, targets, vocab, ties)  # type: ignore[arg-type]
    np.testing.assert_array_equal(rank.numpy(), reference_rank(real.numpy(), targets.numpy(), ties))
    expected = -F.cross_entropy(real, targets, reduction="none")
    # two log-softmax kernels on the same logits (was rtol=atol=1e-6): their float32 rounding, tests/tolerances.py
    assert_logprobs_close(logprob.numpy(), expected.numpy(), logprob_tolerance(real, targets), "vs cross_entropy")
    # a wrong implementation ranking over all columns would be off by the padding width
    assert (reference_rank(padded.numpy(), targets.numpy(), ties) == rank.numpy() + columns - vocab).all()


def test_logprob_matches_cross_entropy() -> None:
    g = torch.Generator().manual_seed(2)
    vocab, columns = 1000, 1024
    logits = torch.randn(128, columns, generator=g) * 5
    targets = torch.randint(0, vocab, (128,), generator=g)
    _, logprob = rank_and_logprob(logits, targets, vocab, "ge")
    assert logprob.dtype == torch.float32
    expected = -F.cross_entropy(logits[:, :vocab].float(), targets, reduction="none")
    # two log-softmax kernels on the same logits (was rtol=atol=1e-6): their float32 rounding, tests/tolerances.py
    bound = logprob_tolerance(logits[:, :vocab], targets)
    assert_logprobs_close(logprob.numpy(), expected.numpy(), bound, "vs cross_entropy")
    # and against a float64 reference, to the precision float32 allows (was atol=1e-5): one rounded path
    ref64 = torch.log_softmax(logits[:, :vocab].double(), dim=1).gather(1, targets[:, None]).squeeze(1)
    bound = logprob_tolerance(logits[:, :vocab], targets, paths=1)
    assert_logprobs_close(logprob.numpy(), ref64.numpy(), bound, "vs float64")


def test_bfloat16_logits_compared_in_float32() -> None:
    g = torch.Generator().manual_seed(3)
    vocab, columns = 300, 320
    logits = (torch.randn(96, columns, generator=g) * 4).to(torch.bfloat16)  # many exact ties in bf16
    targets = torch.randint(0, vocab, (96,), generator=g)
    as32 = logits[:, :vocab].float()
    for ties in ("ge", "gt"):
        rank, logprob = rank_and_logprob(logits, targets, vocab, ties)  # type: ignore[arg-type]
        np.testing.assert_array_equal(rank.numpy(), reference_rank(as32.numpy(), targets.numpy(), ties))
        assert logprob.dtype == torch.float32
        # two log-softmax kernels on the same float32 logits (was rtol=atol=1e-6): tests/tolerances.py
        expected = -F.cross_entropy(as32, targets, reduction="none")
        assert_logprobs_close(logprob.numpy(), expected.numpy(), logprob_tolerance(as32, targets), "vs cross_entropy")
    ge = rank_and_logprob(logits, targets, vocab, "ge")[0]
    gt = rank_and_logprob(logits, targets, vocab, "gt")[0]
    assert (ge != gt).any(), "bf16 logits should produce ties that separate the conventions"


def test_integer_target_dtypes() -> None:
    logits = torch.tensor([[0.0, 2.0, 1.0], [3.0, 2.0, 1.0]])
    for dtype in (torch.int32, torch.int64):
        rank, _ = rank_and_logprob(logits, torch.tensor([2, 0], dtype=dtype), 3, "ge")
        assert rank.tolist() == [2, 1]


def test_empty_batch() -> None:
    rank, logprob = rank_and_logprob(torch.zeros(0, 10), torch.zeros(0, dtype=torch.long), 8, "ge")
    assert rank.shape == (0,) and logprob.shape == (0,)


def test_target_outside_vocabulary_raises() -> None:
    logits = torch.zeros(2, 10)
    with pytest.raises(ValueError, match="8"):
        rank_and_logprob(logits, torch.tensor([1, 8]), 8, "ge")


def test_vocab_larger_than_columns_raises() -> None:
    with pytest.raises(ValueError, match="11"):
        rank_and_logprob(torch.zeros(2, 10), torch.tensor([1, 2]), 11, "ge")


def test_bad_tie_rule_raises() -> None:
    with pytest.raises(ValueError, match="'geq'"):
        rank_and_logprob(torch.zeros(2, 10), torch.tensor([1, 2]), 10, "geq")  # type: ignore[arg-type]


def test_shape_mismatch_raises() -> None:
    with pytest.raises(ValueError):
        rank_and_logprob(torch.zeros(3, 10), torch.tensor([1, 2]), 10, "ge")
    with pytest.raises(ValueError):
        rank_and_logprob(torch.zeros(10), torch.tensor([1]), 10, "ge")


def test_non_finite_target_logit_raises() -> None:
    logits = torch.zeros(2, 10)
    logits[1, 4] = float("nan")
    with pytest.raises(FloatingPointError):
        rank_and_logprob(logits, torch.tensor([1, 4]), 10, "ge")

"""The fused rank kernel (rankscale.fused_rank) on the CPU, through Triton's interpreter, against the chunked path.

Three kinds of evidence:
- exact: hidden states and head rows on a grid of quarters make every logit an exact float32 number, whatever
  the order of the sums, so ranks (with their many exact ties) must equal a brute-force count exactly, under
  both tie rules, at every column count up to Gemma-3's 262,144, with padded columns excluded;
- within float32 bounds: random heads and hidden states, against the chunked path's logits
  (tests/tolerances.py: equal ranks except at counted near ties, log-probs within their rounding bound);
- end to end: `extract_ranks` with `kernel: fused` against `kernel: chunked` on the tiny hub architectures.
Triton's interpreter runs the kernels' own code in numpy (operands upcast to float32 before tl.dot, as
the module says); the tensor-core lowering itself is tested on a GPU (tests/test_cuda.py).
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before Triton compiles anything: the kernels run in numpy
pytest.importorskip("triton")

from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from rankscale.extract import extract_ranks  # noqa: E402
from rankscale.fused_rank import INTERPRETED, Blocks, FusedRankHead, default_blocks  # noqa: E402
from rankscale.head import (  # noqa: E402
    BYTES_PER_LOGIT,
    DEVICE_HEAD_FRACTION,
    auto_head_chunk,
    device_head_chunk,
    resolve_kernel,
)
from rankscale.ranking import TokenScores, rank_and_logprob, score_tokens  # noqa: E402
from rankscale.tokens import TokenizedCorpus  # noqa: E402
from rankscale.windows import Windows  # noqa: E402
from tests.test_extract import (  # noqa: E402, F401  (fixtures: the tiny hub architectures and their corpus)
    ARCHS,
    corpus,
    loaded,
    model_dirs,
    scoring,
    tokenizer_dir,
    windows,
)
from tests.tolerances import (  # noqa: E402
    assert_calibration_close,
    assert_logprobs_close,
    assert_ranks_close,
    brute_force_calibration,
    calibration_tolerance,
    logprob_tolerance,
    path_tolerance,
)

pytestmark = pytest.mark.skipif(not INTERPRETED, reason="TRITON_INTERPRET was set to something else before import")
SMALL = Blocks(16, 32, 16)  # several row blocks, column tiles and hidden steps on tiny shapes
WIDE = Blocks(16, 512, 16)  # few interpreted tiles on the widest heads


def quarters(shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    """Values in {-3/4, ..., 3/4}: every dot product of 16 of them is exact in float32 (and bfloat16 holds them)."""
    return torch.randint(-3, 4, shape, generator=gen).float() / 4


def _fields(scores: TokenScores) -> dict[str, np.ndarray]:
    return {"mass_above": scores.mass_above.numpy(), "top1_logprob": scores.top1_logprob.numpy(),
            "entropy": scores.entropy.numpy()}  # fmt: skip


def brute_force(logits: torch.Tensor, targets: torch.Tensor, vocab: int, ties: str) -> torch.Tensor:
    """The definition, over the real vocabulary, in float64."""
    real = logits[:, :vocab].double()
    zt = real.gather(1, targets[:, None])
    return (real >= zt).sum(1) if ties == "ge" else (real > zt).sum(1) + 1


@pytest.mark.parametrize("ties", ["ge", "gt"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(
    "columns, vocab, blocks",
    [(16, 16, SMALL), (33, 30, SMALL), (320, 300, SMALL), (1000, 1000, SMALL), (50304, 50277, WIDE),
     (151936, 151665, WIDE), (262144, 262144, WIDE), (262144, 256000, WIDE)],
)  # fmt: skip
def test_exact_ranks_with_exact_ties_at_every_column_count(
    columns: int, vocab: int, blocks: Blocks, dtype: torch.dtype, ties: str
) -> None:
    gen = torch.Generator().manual_seed(columns + vocab)
    n, d = (37, 16) if columns <= 1000 else (9, 16)
    weight, hidden = quarters((columns, d), gen), quarters((n, d), gen)
    targets = torch.randint(0, vocab, (n,), generator=gen)
    weight[targets[1]] = weight[targets[0]]  # twin rows: an exact tie for row 0 and row 1 at least
    if columns > vocab:  # a padded column that would beat every target: it must never count
        weight[vocab:] = 0
        weight[-1] = 4 * hidden.sum(0).sign()
    logits = hidden @ weight.T  # exact: small quarters
    expected = brute_force(logits, targets, vocab, ties)
    fused = FusedRankHead(weight.to(dtype), None, vocab, ties, blocks=blocks, splits=3)
    scores = fused(hidden.to(dtype), targets)
    np.testing.assert_array_equal(scores.rank.numpy(), expected.numpy())
    reference = torch.log_softmax(logits[:, :vocab].double(), 1).gather(1, targets[:, None])[:, 0]
    atol = 1e-4 + 1e-6 * np.log(vocab)
    np.testing.assert_allclose(scores.logprob.double().numpy(), reference.numpy(), rtol=0, atol=atol)
    # exact logits: the calibration fields against the definition, with the twins' exact tie inside the mass
    brute = brute_force_calibration(logits[:, :vocab], targets, ties)
    tol = calibration_tolerance(logits[:, :vocab], targets, paths=1)
    assert_calibration_close(_fields(scores), brute, tol, f"fused vs the definition, {columns} columns")
    assert (expected[:2] > 1).all() or ties == "gt"  # the twins tie: under ge each counts the other


@pytest.mark.parametrize("ties", ["ge", "gt"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_random_heads_match_the_chunked_path_within_float32_bounds(dtype: torch.dtype, bias: bool, ties: str) -> None:
    gen = torch.Generator().manual_seed(7)
    columns, vocab, n, d = 480, 451, 70, 48
    head = torch.nn.Linear(d, columns, bias=bias)
    with torch.no_grad():
        head.weight.copy_(torch.randn(columns, d, generator=gen).to(dtype).float())
        if bias:
            head.bias.copy_(torch.randn(columns, generator=gen))
    hidden = torch.randn(n, d, generator=gen).to(dtype)
    targets = torch.randint(0, vocab, (n,), generator=gen)
    with torch.no_grad():
        logits = head(hidden.float())  # the chunked path's float32 head
    expected_rank, expected_lp = rank_and_logprob(logits, targets, vocab, ties)
    fused = FusedRankHead(head.weight.detach().to(dtype), head.bias, vocab, ties, blocks=SMALL, splits=2)
    scores = fused(hidden, targets)
    tol = path_tolerance(logits.detach()[:, :vocab], targets, hidden.float(), head)
    assert_ranks_close(scores.rank.numpy(), expected_rank.numpy(), tol, f"fused vs chunked, {dtype}, bias {bias}")
    assert_logprobs_close(scores.logprob.numpy(), expected_lp.numpy(), tol, f"fused vs chunked, {dtype}, bias {bias}")
    chunked = score_tokens(logits.detach(), targets, vocab, ties)
    assert_calibration_close(_fields(scores), _fields(chunked), calibration_tolerance(logits.detach()[:, :vocab], targets, tol),
                             f"fused vs chunked, {dtype}, bias {bias}")  # fmt: skip


@pytest.mark.parametrize("splits", [1, 2, 5, 64])
def test_column_splits_combine_to_the_same_result(splits: int) -> None:
    gen = torch.Generator().manual_seed(3)
    weight, hidden = quarters((1000, 16), gen), quarters((20, 16), gen)
    targets = torch.randint(0, 990, (20,), generator=gen)
    split = FusedRankHead(weight, None, 990, "ge", blocks=SMALL, splits=splits)(hidden, targets)
    np.testing.assert_array_equal(split.rank.numpy(), brute_force(hidden @ weight.T, targets, 990, "ge").numpy())
    whole = FusedRankHead(weight, None, 990, "ge", blocks=SMALL, splits=1)(hidden, targets)
    for a, b in zip(split.fields()[1:], whole.fields()[1:], strict=True):  # log-prob and the calibration fields
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=2e-6)


def test_logits_rounded_to_the_model_dtype_tie_as_a_bfloat16_head_does() -> None:
    """`head_dtype: model`: logits rounded to bfloat16 first, so near logits become exact ties."""
    gen = torch.Generator().manual_seed(11)
    weight = torch.randn(300, 32, generator=gen).to(torch.bfloat16)
    hidden = torch.randn(25, 32, generator=gen).to(torch.bfloat16)
    targets = torch.randint(0, 300, (25,), generator=gen)
    rounded = (hidden.float() @ weight.float().T).to(torch.bfloat16).float()
    for ties in ("ge", "gt"):
        rank = FusedRankHead(weight, None, 300, ties, round_to=torch.bfloat16, blocks=SMALL)(hidden, targets).rank
        exact_f32 = (hidden.float() @ weight.float().T).double()
        far = _no_float32_near_ties(exact_f32, targets)  # rows whose float32 logits are not within rounding
        expected = brute_force(rounded, targets, 300, ties)
        np.testing.assert_array_equal(rank.numpy()[far], expected.numpy()[far])
    assert (brute_force(rounded, targets, 300, "ge") != brute_force(rounded, targets, 300, "gt")).any()


def _no_float32_near_ties(logits: torch.Tensor, targets: torch.Tensor) -> np.ndarray:
    """Rows where no logit sits within float32 rounding of a bfloat16 rounding boundary of the target's or a
    competitor's: there the rounded ranks cannot depend on the order of the float32 sums."""
    z = logits
    rounded = z.float().to(torch.bfloat16).double()
    ulp = z.abs() * 2.0**-20 + 1e-30
    up, down = (z + ulp).float().to(torch.bfloat16).double(), (z - ulp).float().to(torch.bfloat16).double()
    stable = ((up == rounded) & (down == rounded)).all(1)
    return stable.numpy()


def test_kernel_selection_and_device_sized_chunks() -> None:
    cpu = torch.device("cpu")
    assert resolve_kernel("auto", cpu) == "chunked"
    assert resolve_kernel("chunked", cpu) == "chunked"
    assert resolve_kernel("fused", cpu) == "fused"  # allowed here only because the interpreter is on
    with pytest.raises(ValueError, match="extraction.kernel must be one of"):
        resolve_kernel("cublas", cpu)  # type: ignore[arg-type]
    # a GPU with 60 GiB free and the Qwen2.5 head: a quarter of it for 16 bytes a logit
    rows = device_head_chunk(151936, 60 * 2**30)
    assert rows == int(DEVICE_HEAD_FRACTION * 60 * 2**30) // (BYTES_PER_LOGIT * 151936) == 6625
    assert device_head_chunk(151936, 0) == auto_head_chunk(151936) == 110  # never below the CPU's size


@pytest.mark.parametrize("arch", ARCHS)
def test_extraction_with_the_fused_kernel_matches_the_chunked_one(
    arch: str,
    loaded: dict[str, tuple[Any, Any]],  # noqa: F811
    corpus: TokenizedCorpus,  # noqa: F811
    windows: Windows,  # noqa: F811
    model_dirs: dict[str, Path],  # noqa: F811
) -> None:
    """The same model, corpus and windows through both kernels: extract_ranks end to end (padded heads)."""
    model, tokenizer = loaded[arch]
    vocab = len(tokenizer)
    stats: dict[str, Any] = {}
    fused = extract_ranks(model, corpus, windows, vocab, scoring(batch_size=3, kernel="fused"), stats)
    assert stats["kernel"] == "fused" and stats["head_chunk"] is None
    chunked = extract_ranks(model, corpus, windows, vocab, scoring(batch_size=3, kernel="chunked"))
    np.testing.assert_array_equal(fused.target, chunked.target)
    hidden, targets = _head_inputs(model, corpus, windows)
    head = model.get_output_embeddings()
    logits = head(hidden).float()[:, :vocab]
    tol = path_tolerance(logits, targets, hidden, head)
    assert_ranks_close(fused.rank, chunked.rank, tol, f"{arch}: fused vs chunked")
    assert_logprobs_close(fused.logprob, chunked.logprob, tol, f"{arch}: fused vs chunked")
    assert fused.calibration is not None and chunked.calibration is not None
    assert_calibration_close(fused.calibration.as_dict(), chunked.calibration.as_dict(),
                             calibration_tolerance(logits, targets, tol), f"{arch}: fused vs chunked")  # fmt: skip


def _head_inputs(model: Any, tokens_of: TokenizedCorpus, cut: Windows) -> tuple[torch.Tensor, torch.Tensor]:
    """Hidden states and targets of every scored token, in output order (one window at a time)."""
    hidden, targets = [], []
    with torch.inference_mode():
        for w in range(len(cut)):
            s, e, f = int(cut.start[w]), int(cut.end[w]), int(cut.score_from[w])
            tokens = torch.from_numpy(tokens_of.doc(int(cut.doc[w]))[s:e].astype(np.int64))
            h = model.base_model(input_ids=tokens[None]).last_hidden_state[0]
            hidden.append(h[f - 1 - s : e - 1 - s])
            targets.append(tokens[f - s : e - s])
    return torch.cat(hidden), torch.cat(targets)


@pytest.mark.slow
def test_smollm2_through_the_fused_kernel_equals_a_plain_forward_pass() -> None:
    """A real pretrained model (SmolLM2-135M from its package's GGUF file, 49,152 columns, d = 576) on real text:
    the fused kernel's ranks and log-probs against the full logits of a plain forward pass."""
    import json

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests.test_pretrained import smollm2

    path = smollm2()
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32).eval()
    source = Path(json.__file__).read_text()  # real Python source: the standard library's json package
    ids = torch.tensor([tok(source)["input_ids"][:160]])
    with torch.inference_mode():
        hidden = model.model(input_ids=ids).last_hidden_state[0, :-1]
        head = model.get_output_embeddings()
        logits = head(hidden).float()
    targets, vocab = ids[0, 1:], len(tok)
    assert head.weight.shape == (vocab, 576) and vocab == 49152
    chosen = logits.gather(1, targets[:, None])
    expected_rank = (logits[:, :vocab] >= chosen).sum(1)
    expected_lp = torch.log_softmax(logits[:, :vocab], dim=-1).gather(1, targets[:, None])[:, 0]
    scores = FusedRankHead(head.weight, head.bias, vocab, "ge", blocks=Blocks(32, 1024, 32))(hidden, targets)
    tol = path_tolerance(logits[:, :vocab], targets, hidden, head)
    assert_ranks_close(scores.rank.numpy(), expected_rank.numpy(), tol, "smollm2: fused vs full logits")
    assert_logprobs_close(scores.logprob.numpy(), expected_lp.numpy(), tol, "smollm2: fused vs full logits")
    assert_calibration_close(_fields(scores), brute_force_calibration(logits[:, :vocab], targets, "ge"),
                             calibration_tolerance(logits[:, :vocab], targets, tol), "smollm2: fused vs full logits")  # fmt: skip
    assert (scores.rank == 1).float().mean() > 0.2  # a real model on real text: many tokens ranked first


def test_a_bias_of_minus_infinity_weighs_nothing_in_the_fused_kernel() -> None:
    """Columns a model masks with a bias of -inf: probability 0 in every field, none of them NaN."""
    gen = torch.Generator().manual_seed(13)
    weight, hidden = quarters((300, 16), gen), quarters((20, 16), gen)
    bias = torch.zeros(300)
    bias[250:] = float("-inf")
    targets = torch.randint(0, 250, (20,), generator=gen)
    scores = FusedRankHead(weight, bias, 300, "ge", blocks=SMALL, splits=2)(hidden, targets)
    expected = score_tokens(hidden @ weight[:250].T, targets, 250, "ge")
    np.testing.assert_array_equal(scores.rank.numpy(), expected.rank.numpy())
    for got, want in zip(scores.fields()[1:], expected.fields()[1:], strict=True):
        assert np.isfinite(got.numpy()).all()
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=2e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_interpreted_default_tiles_cap_a_wide_head_with_the_same_result(dtype: torch.dtype) -> None:
    """Under the interpreter a head of more than 64 GPU tiles streams in 64 wider ones (a GPU session's CPU
    rehearsal: its 262,144 columns in 64 tiles, not 2,048); narrow heads keep the GPU's tiles. Exact logits
    (quarters, twin target rows for exact ties): the same ranks as the GPU's tiles and the definition."""
    gpu = Blocks(64, 128, 64) if dtype == torch.bfloat16 else Blocks(32, 64, 32)
    assert default_blocks(dtype, 64 * gpu.n) == gpu
    assert default_blocks(dtype, 262144) == Blocks(gpu.m, 4096, gpu.k)
    columns = 64 * gpu.n + 900  # just past the cap: wider tiles, the last one part padding
    wide = default_blocks(dtype, columns)
    assert wide.n == 2 * gpu.n and -(-columns // wide.n) <= 64
    gen = torch.Generator().manual_seed(23)
    weight, hidden = quarters((columns, 16), gen), quarters((40, 16), gen)
    targets = torch.randint(0, columns, (40,), generator=gen)
    weight[targets[1]] = weight[targets[0]]
    head = FusedRankHead(weight.to(dtype), None, columns, "ge")
    assert head.blocks == wide
    got = head(hidden.to(dtype), targets)
    tiled = FusedRankHead(weight.to(dtype), None, columns, "ge", blocks=gpu)(hidden.to(dtype), targets)
    logits = hidden.double() @ weight.double().T  # exact in float32 too: only the sums' order differs
    np.testing.assert_array_equal(got.rank.numpy(), brute_force(logits, targets, columns, "ge").numpy())
    np.testing.assert_array_equal(got.rank.numpy(), tiled.rank.numpy())
    lp = torch.log_softmax(logits, 1).gather(1, targets[:, None])[:, 0].numpy()
    tol = calibration_tolerance(logits.float(), targets, paths=1)
    for scores, what in ((got, "wide interpreted tiles"), (tiled, "the GPU's tiles")):
        assert_logprobs_close(scores.logprob.numpy(), lp, logprob_tolerance(logits.float(), targets, paths=1), what)
        assert_calibration_close(_fields(scores), brute_force_calibration(logits, targets, "ge"), tol, what)

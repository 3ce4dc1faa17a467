"""Rank extraction on tiny, randomly initialised hub architectures saved and reloaded locally.

Each model has a padded output layer (more columns than the tokenizer has tokens), like
Pythia, OPT and Qwen2.5. Models go through `save_pretrained` (safetensors) and come back
through `rankscale.models.load_model`, the code that loads hub ids. Extraction (batched,
padded, chunked through the output head) is compared with an independent per-window
forward pass and a brute-force rank over the real vocabulary.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, GPT2Config, GPTNeoXConfig, OPTConfig, Qwen2Config

from rankscale.corpus import Document
from rankscale.extract import ExtractionSettings, extract_ranks
from rankscale.ladder import train_tokenizer
from rankscale.models import ModelLoadError, ModelSource, load_model, load_tokenizer, output_columns
from rankscale.params import count_parameters
from rankscale.rankfile import RankArrays, RankFileError, load_rank_arrays, save_rank_arrays
from rankscale.sources.packaged import pydoc_documents
from rankscale.tokens import TokenizedCorpus, load_tokens, save_tokens, tokenize_documents
from rankscale.windows import Windows, WindowSpec, plan_windows
from tests.tolerances import (
    CalibrationTolerance,
    PathTolerance,
    assert_calibration_close,
    assert_logprobs_close,
    assert_ranks_close,
    brute_force_calibration,
    calibration_tolerance,
    extraction_threads,
    head_inputs,
    path_tolerance,
    reference_threads,
    torch_threads,
)

ARCHS = ("gpt_neox", "gpt2", "opt", "qwen2")
D, LAYERS, HEADS, FFN, POSITIONS = 32, 2, 4, 64, 64
PAD_TO = 320  # output columns; the tokenizer has fewer real tokens
SPEC = WindowSpec(max_length=16, stride=5, max_windows_per_doc=None)

TEXTS = [
    "The quick brown fox jumps over the lazy dog, and the dog does not seem to mind at all.",
    "x",  # one token: never scored, dropped by tokenize_documents
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))\n",
    "Ranks of the correct next token follow a relative-based scaling law in model size.",
    "ab",
]


def make_config(arch: str, eos_id: int) -> Any:
    common = dict(vocab_size=PAD_TO, bos_token_id=eos_id, eos_token_id=eos_id, initializer_range=0.2)
    if arch == "gpt_neox":
        return GPTNeoXConfig(
            hidden_size=D,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            intermediate_size=FFN,
            max_position_embeddings=POSITIONS,
            rotary_pct=0.25,
            tie_word_embeddings=False,
            **common,
        )
    if arch == "gpt2":
        return GPT2Config(n_embd=D, n_layer=LAYERS, n_head=HEADS, n_positions=POSITIONS, **common)
    if arch == "opt":
        return OPTConfig(
            hidden_size=D,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            ffn_dim=FFN,
            max_position_embeddings=POSITIONS,
            word_embed_proj_dim=D,
            pad_token_id=eos_id,
            **common,
        )
    if arch == "qwen2":
        return Qwen2Config(
            hidden_size=D,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            num_key_value_heads=2,
            intermediate_size=FFN,
            max_position_embeddings=POSITIONS,
            tie_word_embeddings=True,
            **common,
        )
    raise AssertionError(arch)


def hand_count(arch: str) -> dict[str, int]:
    """Non-embedding and embedding parameter counts written out from each architecture."""
    d, f, layers = D, FFN, LAYERS
    if arch == "gpt_neox":  # 2 LayerNorms, fused biased qkv, biased dense, biased 2-layer MLP
        per_layer = 2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d)
        return {"non_embedding": layers * per_layer + 2 * d, "head": PAD_TO * d, "positions": 0}
    if arch == "gpt2":  # Conv1D c_attn (3d), c_proj, MLP 4d, 2 LayerNorms; ln_f; wpe
        per_layer = 2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d)
        return {"non_embedding": layers * per_layer + 2 * d, "head": 0, "positions": POSITIONS * d}
    if arch == "opt":  # 4 biased projections, 2 LayerNorms, fc1/fc2; final LayerNorm; positions + 2
        per_layer = 4 * (d * d + d) + 2 * 2 * d + (d * f + f) + (f * d + d)
        return {"non_embedding": layers * per_layer + 2 * d, "head": 0, "positions": (POSITIONS + 2) * d}
    if arch == "qwen2":  # biased q/k/v (2 kv heads), unbiased o, gated MLP, 2 RMSNorms; final norm
        kv = 2 * (d // HEADS)
        per_layer = (d * d + d) + 2 * (d * kv + kv) + d * d + 3 * d * f + 2 * d
        return {"non_embedding": layers * per_layer + d, "head": 0, "positions": 0}
    raise AssertionError(arch)


@pytest.fixture(autouse=True)
def _extraction_threads() -> Iterator[None]:
    """Every extraction here runs under RANKSCALE_TEST_EXTRACTION_THREADS torch threads, if set, and the
    references under RANKSCALE_TEST_REFERENCE_THREADS (tests/tolerances.py): paths made to differ on purpose."""
    with torch_threads(extraction_threads()):
        yield


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tokenizer")
    docs = [Document(str(i), t) for i, t in enumerate(TEXTS)] + list(pydoc_documents())[:20]
    train_tokenizer(docs, 300, out)
    return out


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory, tokenizer_dir: Path) -> dict[str, Path]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    assert len(tok) < PAD_TO
    dirs = {}
    for i, arch in enumerate(ARCHS):
        torch.manual_seed(100 + i)
        model = AutoModelForCausalLM.from_config(make_config(arch, tok.eos_token_id))
        out = tmp_path_factory.mktemp(arch)
        model.save_pretrained(str(out), safe_serialization=True)
        tok.save_pretrained(str(out))
        dirs[arch] = out
    return dirs


def source(model_dirs: dict[str, Path], arch: str) -> ModelSource:
    return ModelSource.directory(f"tiny-{arch}", str(model_dirs[arch]))


def cpu_model(where: ModelSource, dtype: str = "float32") -> Any:
    """The model on the CPU, as an extraction job loads it with these settings."""
    return load_model(where, dtype=dtype, device="cpu", device_map=None, attn_implementation=None)


def scoring(**settings: Any) -> ExtractionSettings:
    """Extraction settings of these tests: the paper's ties, a float32 head, automatic head chunks, unless given."""
    return ExtractionSettings(
        **{"ties": "ge", "head_dtype": torch.float32, "head_chunk": None, "kernel": "auto", **settings}
    )


@pytest.fixture(scope="module")
def loaded(model_dirs: dict[str, Path]) -> dict[str, tuple[Any, Any]]:
    return {arch: (cpu_model(source(model_dirs, arch)), load_tokenizer(source(model_dirs, arch))) for arch in ARCHS}


@pytest.fixture(scope="module")
def corpus(loaded: dict[str, tuple[Any, Any]]) -> TokenizedCorpus:
    tokenizer = loaded["gpt_neox"][1]  # all models share the tokenizer
    docs = [Document(str(i), t) for i, t in enumerate(TEXTS)]
    tokenized, stats = tokenize_documents(docs, tokenizer, add_special_tokens=False)
    assert stats["skipped_short_documents"] == 1
    return tokenized


@pytest.fixture(scope="module")
def windows(corpus: TokenizedCorpus) -> Windows:
    w = plan_windows(corpus.doc_lengths(), SPEC)
    assert np.bincount(w.doc).max() >= 3, "documents must need several windows"
    return w


def reference(
    model: Any,
    corpus: TokenizedCorpus,
    windows: Windows,
    vocab: int,
    ties: str = "ge",
    columns: int | None = None,
    output_dtype: torch.dtype | None = None,
) -> dict[str, Any]:
    """Each window on its own through the full model; brute-force rank over `columns`. "tol": how far another
    path may differ, token by token (tests/tolerances.py, from the hidden states this pass fed the head;
    `output_dtype`: the dtype the head rounds its logits to, if not float32)."""
    columns = vocab if columns is None else columns
    out: dict[str, list[Any]] = {k: [] for k in ("rank", "logprob", "doc", "pos", "target")}
    tol, calibration, calibration_tol = [], [], []
    device = next(model.parameters()).device  # the tests of the CUDA path (tests/test_cuda.py) pass a GPU model
    with torch.no_grad(), reference_threads(), head_inputs(model) as hidden:
        for w in range(len(windows)):
            d, s, e, f = (int(a[w]) for a in (windows.doc, windows.start, windows.end, windows.score_from))
            tokens = corpus.doc(d).astype(np.int64)
            logits = model(input_ids=torch.from_numpy(tokens[s:e])[None].to(device)).logits[0].float().cpu()
            rows, targets = torch.arange(f - 1 - s, e - 1 - s), torch.from_numpy(tokens[f:e])
            tol.append(path_tolerance(logits[rows, :vocab], targets, hidden[-1][0].cpu()[rows],
                                      model.get_output_embeddings(), output_dtype=output_dtype))  # fmt: skip
            calibration.append(brute_force_calibration(logits[rows, :vocab], targets, ties))
            calibration_tol.append(calibration_tolerance(logits[rows, :vocab], targets, tol[-1]))
            for p in range(f, e):
                row = logits[p - 1 - s].numpy().astype(np.float64)
                t = int(tokens[p])
                value = row[t]
                if ties == "ge":
                    rank = int((row[:columns] >= value).sum())
                else:
                    rank = int((row[:columns] > value).sum()) + 1
                out["rank"].append(rank)
                out["logprob"].append(float(torch.log_softmax(logits[p - 1 - s, :vocab], dim=0)[t]))
                out["doc"].append(d)
                out["pos"].append(p)
                out["target"].append(t)
    fields = ("mass_above", "top1_logprob", "entropy")
    return {**{k: np.asarray(v) for k, v in out.items()}, "tol": PathTolerance.concat(tol),
            "calibration": {f: np.concatenate([c[f] for c in calibration]) for f in fields},
            "calibration_tol": CalibrationTolerance(*(np.concatenate([getattr(c, f) for c in calibration_tol])
                                                      for f in fields))}  # fmt: skip


def assert_matches_reference(arrays: RankArrays, ref: dict[str, Any]) -> None:
    np.testing.assert_array_equal(arrays.doc, ref["doc"])
    np.testing.assert_array_equal(arrays.pos, ref["pos"])
    np.testing.assert_array_equal(arrays.target, ref["target"])
    # batched, padded, chunked extraction against per-window passes: float32 paths that round differently.
    # Was: ranks equal where no competitor was within 1e-5, log-probs atol=1e-5. Now: each token's bound
    # from u * sqrt(d) * sum|w h| of its own logits; ranks equal but at counted near ties (tests/tolerances.py)
    assert_ranks_close(arrays.rank, ref["rank"], ref["tol"], "extraction vs per-window reference")
    assert_logprobs_close(arrays.logprob, ref["logprob"], ref["tol"], "extraction vs per-window reference")
    assert arrays.calibration is not None  # extraction always writes the calibration fields
    assert_calibration_close(arrays.calibration.as_dict(), ref["calibration"], ref["calibration_tol"],
                             "extraction vs per-window reference")  # fmt: skip


def assert_full_coverage(arrays: RankArrays, corpus: TokenizedCorpus) -> None:
    """Every target (doc, pos >= 1) exactly once, in (doc, pos) order, with the right token."""
    expected = [(d, p) for d, n in enumerate(corpus.doc_lengths()) for p in range(1, int(n))]
    assert list(zip(arrays.doc.tolist(), arrays.pos.tolist(), strict=True)) == expected
    for d in range(len(corpus.doc_lengths())):
        sel = arrays.doc == d
        np.testing.assert_array_equal(arrays.target[sel], corpus.doc(d)[1:])


def test_tokenizer_and_padding(loaded: dict[str, tuple[Any, Any]]) -> None:
    for model, tokenizer in loaded.values():
        assert output_columns(model) == PAD_TO > len(tokenizer)
        assert not model.training


@pytest.mark.parametrize("arch", ARCHS)
def test_extract_matches_independent_reference(
    arch: str, loaded: dict[str, tuple[Any, Any]], corpus: TokenizedCorpus, windows: Windows
) -> None:
    model, tokenizer = loaded[arch]
    vocab = len(tokenizer)
    arrays = extract_ranks(model, corpus, windows, vocab, scoring(batch_size=3, head_chunk=7))
    for name, dtype in (("rank", np.uint32), ("logprob", np.float32), ("doc", np.uint32), ("pos", np.uint32)):
        assert getattr(arrays, name).dtype == dtype
    assert_full_coverage(arrays, corpus)
    ref = reference(model, corpus, windows, vocab)
    assert_matches_reference(arrays, ref)
    assert arrays.rank.min() >= 1 and arrays.rank.max() <= vocab


def test_one_window_per_document(loaded: dict[str, tuple[Any, Any]], corpus: TokenizedCorpus) -> None:
    model, tokenizer = loaded["gpt2"]
    windows = plan_windows(corpus.doc_lengths(), WindowSpec(max_length=16, stride=None, max_windows_per_doc=1))
    arrays = extract_ranks(model, corpus, windows, len(tokenizer), scoring(batch_size=2, head_chunk=5))
    expected = [(d, p) for d, n in enumerate(corpus.doc_lengths()) for p in range(1, min(int(n), 16))]
    assert list(zip(arrays.doc.tolist(), arrays.pos.tolist(), strict=True)) == expected
    assert_matches_reference(arrays, reference(model, corpus, windows, len(tokenizer)))


@pytest.mark.parametrize("arch", ["gpt_neox", "opt"])
def test_batch_size_does_not_change_results(
    arch: str, loaded: dict[str, tuple[Any, Any]], corpus: TokenizedCorpus, windows: Windows
) -> None:
    model, tokenizer = loaded[arch]
    one = extract_ranks(model, corpus, windows, len(tokenizer), scoring(batch_size=1, head_chunk=4096))
    seven = extract_ranks(model, corpus, windows, len(tokenizer), scoring(batch_size=7, head_chunk=3))
    for name in ("doc", "pos", "target"):
        np.testing.assert_array_equal(getattr(one, name), getattr(seven, name))
    # padding and batching change the float32 kernels' shapes, so their rounding: was ranks exact and
    # log-probs atol=1e-6, now the per-token float32 bounds of tests/tolerances.py (the reference's logits)
    tol = reference(model, corpus, windows, len(tokenizer))["tol"]
    assert_ranks_close(one.rank, seven.rank, tol, "batch 1 vs batch 7")
    assert_logprobs_close(one.logprob, seven.logprob, tol, "batch 1 vs batch 7")


def test_gt_convention_with_tied_logits(model_dirs: dict[str, Path], corpus: TokenizedCorpus, windows: Windows) -> None:
    """Duplicate head rows pairwise so every target ties with one other token."""
    model = cpu_model(source(model_dirs, "gpt_neox"))
    vocab = len(load_tokenizer(source(model_dirs, "gpt_neox")))
    with torch.no_grad():
        weight = model.get_output_embeddings().weight
        half = vocab // 2
        weight[1 : 2 * half : 2] = weight[0 : 2 * half : 2]
    partner = np.ones(vocab, dtype=bool)
    partner[2 * half :] = False  # an odd last token has no twin
    ge = extract_ranks(model, corpus, windows, vocab, scoring(ties="ge", batch_size=4, head_chunk=6))
    gt = extract_ranks(model, corpus, windows, vocab, scoring(ties="gt", batch_size=4, head_chunk=6))
    assert_matches_reference(ge, reference(model, corpus, windows, vocab, "ge"))
    ref_gt = reference(model, corpus, windows, vocab, "gt")
    # extraction vs per-window reference (was exact): a twin ties exactly in both, other competitors only
    # up to float32 rounding, so the near-tie bounds of tests/tolerances.py (a twin counts as a near tie)
    assert_ranks_close(gt.rank, ref_gt["rank"], ref_gt["tol"], "gt: extraction vs reference")
    np.testing.assert_allclose(gt.logprob, ge.logprob, rtol=0, atol=0)  # one path: the tie rule never changes it
    has_twin = partner[ge.target]
    assert has_twin.sum() > 0.9 * has_twin.size
    np.testing.assert_array_equal(ge.rank[has_twin].astype(np.int64) - gt.rank[has_twin], 1)
    assert (gt.rank[has_twin] < ge.rank[has_twin]).all()


def test_padded_columns_never_count(model_dirs: dict[str, Path], corpus: TokenizedCorpus, windows: Windows) -> None:
    """Give the padded output columns an enormous bias: ranks and log-probs must not move."""
    model = cpu_model(source(model_dirs, "gpt_neox"))
    vocab = len(load_tokenizer(source(model_dirs, "gpt_neox")))
    before = extract_ranks(model, corpus, windows, vocab, scoring(batch_size=4, head_chunk=9))
    old = model.get_output_embeddings()
    new = torch.nn.Linear(D, PAD_TO, bias=True)
    with torch.no_grad():
        new.weight.copy_(old.weight)
        new.bias.zero_()
        new.bias[vocab:] = 1e4
    model.set_output_embeddings(new)
    assert model(input_ids=torch.tensor([[1, 2, 3]])).logits[0, :, vocab:].min() > 1e3  # it reached the logits
    after = extract_ranks(model, corpus, windows, vocab, scoring(batch_size=4, head_chunk=9))
    over_all = reference(model, corpus, windows, vocab, columns=PAD_TO)
    # a biased head (addmm) against the unbiased one (mm): other float32 kernels. Was ranks exact and
    # log-probs atol=1e-6; now the float32 bounds of tests/tolerances.py (zero bias on the real columns)
    assert_ranks_close(after.rank, before.rank, over_all["tol"], "biased vs unbiased head")
    assert_logprobs_close(after.logprob, before.logprob, over_all["tol"], "biased vs unbiased head")
    # counting every output column would push each rank down by the padding width (was exact: the
    # reference's per-window pass against the extraction, so equal but at near ties among real tokens)
    shifted = after.rank.astype(np.int64) + PAD_TO - vocab
    assert_ranks_close(shifted, over_all["rank"], over_all["tol"], "ranks over every column")


@pytest.mark.parametrize("arch", ARCHS)
def test_count_parameters_by_hand(arch: str, loaded: dict[str, tuple[Any, Any]]) -> None:
    model, _ = loaded[arch]
    count = count_parameters(model)
    expected = hand_count(arch)
    assert count.non_embedding == expected["non_embedding"]
    assert count.token_embedding == PAD_TO * D
    assert count.output_head == expected["head"]
    assert count.position_embedding == expected["positions"]
    assert count.total == sum({id(p): p.numel() for p in model.parameters()}.values())


def test_load_model_missing_path(tmp_path: Path) -> None:
    missing = ModelSource.directory("nothing", str(tmp_path / "absent"))
    with pytest.raises(ModelLoadError, match="absent"):
        cpu_model(missing)
    with pytest.raises(ModelLoadError, match="absent"):
        load_tokenizer(missing)


# --- rank files ----------------------------------------------------------------------------


def sample_arrays(n: int = 500, vocab: int = 300) -> RankArrays:
    rng = np.random.default_rng(7)
    return RankArrays(
        rank=rng.integers(1, vocab + 1, n).astype(np.uint32),
        logprob=-rng.exponential(3.0, n).astype(np.float32),
        doc=np.repeat(np.arange(5), n // 5).astype(np.uint32),
        pos=np.tile(np.arange(1, n // 5 + 1), 5).astype(np.uint32),
        target=rng.integers(0, vocab, n).astype(np.uint32),
    )


def save_sample(tmp_path: Path) -> tuple[RankArrays, Path, Path]:
    arrays = sample_arrays()
    path, meta_path = tmp_path / "ranks.npz", tmp_path / "ranks.json"
    save_rank_arrays(arrays, path, meta_path, {"model": "tiny", "vocab_size": 300, "ties": "ge"})
    return arrays, path, meta_path


def test_rank_file_round_trip(tmp_path: Path) -> None:
    arrays, path, meta_path = save_sample(tmp_path)
    loaded, meta = load_rank_arrays(path, meta_path)
    for name, value in arrays.as_dict().items():
        got = getattr(loaded, name)
        assert got.dtype == value.dtype
        np.testing.assert_array_equal(got, value)
    assert meta["n_tokens"] == 500 and meta["model"] == "tiny" and len(meta["sha256"]) == 64
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ranks.json", "ranks.npz"]  # no temporary leftovers


def test_truncated_rank_file_raises(tmp_path: Path) -> None:
    _, path, meta_path = save_sample(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(RankFileError, match="ranks.npz"):
        load_rank_arrays(path, meta_path)


def test_truncated_rank_file_raises_without_checksum(tmp_path: Path) -> None:
    _, path, meta_path = save_sample(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(RankFileError, match="ranks.npz"):
        load_rank_arrays(path, meta_path, verify_checksum=False)


def test_altered_rank_file_raises(tmp_path: Path) -> None:
    _, path, meta_path = save_sample(tmp_path)
    data = bytearray(path.read_bytes())
    data[-200] ^= 0xFF  # flip one byte inside the array payload
    path.write_bytes(bytes(data))
    with pytest.raises(RankFileError, match="ranks.npz"):
        load_rank_arrays(path, meta_path)


def test_replaced_rank_file_with_matching_checksum_is_still_checked(tmp_path: Path) -> None:
    arrays, path, meta_path = save_sample(tmp_path)
    meta = json.loads(meta_path.read_text())
    bad = RankArrays(**{**arrays.as_dict(), "rank": arrays.rank.astype(np.int64)})  # wrong dtype
    save_rank_arrays(bad, path, meta_path, {k: v for k, v in meta.items() if k not in ("sha256", "n_tokens")})
    with pytest.raises(RankFileError, match="'rank'"):
        load_rank_arrays(path, meta_path)
    out_of_range = RankArrays(**{**arrays.as_dict(), "rank": np.full(500, 301, dtype=np.uint32)})
    save_rank_arrays(out_of_range, path, meta_path, {k: v for k, v in meta.items() if k not in ("sha256", "n_tokens")})
    with pytest.raises(RankFileError, match="ranks.npz"):
        load_rank_arrays(path, meta_path)
    missing = {k: v for k, v in arrays.as_dict().items() if k != "target"}
    np.savez(path, **missing)
    with pytest.raises(RankFileError, match="ranks.npz"):
        load_rank_arrays(path, meta_path, verify_checksum=False)


# ---------------------------------------------------------------- chunking, back-off, memory paths


@pytest.mark.parametrize("arch", ARCHS)
def test_chunked_head_matches_unchunked(arch: str, loaded: dict[str, tuple[Any, Any]], corpus, windows) -> None:
    model, tok = loaded[arch]
    whole = extract_ranks(model, corpus, windows, len(tok), scoring(batch_size=4, head_chunk=10**9))
    tol = reference(model, corpus, windows, len(tok))["tol"]
    for chunk in (1, 7, 9, None):
        part = extract_ranks(model, corpus, windows, len(tok), scoring(batch_size=4, head_chunk=chunk))
        # was exact (padding short chunks to MIN_HEAD_ROWS gave equal bits on the machine it was written on), but
        # a head chunk is a matrix product of another shape, whose float32 kernel BLAS picks per shape and CPU:
        # 9-row chunks differ in the last bits here (AMD EPYC, MKL), and under MKL_CBWR=COMPATIBLE chunks of 1 to
        # 16 rows all do. So the float32 bounds of tests/tolerances.py, as for any two paths
        assert_ranks_close(part.rank, whole.rank, tol, f"head chunk {chunk} vs unchunked")
        assert_logprobs_close(part.logprob, whole.logprob, tol, f"head chunk {chunk} vs unchunked")


def test_out_of_memory_halves_the_batch_and_loses_nothing(loaded: dict[str, tuple[Any, Any]], corpus, windows) -> None:
    """A forward hook makes the real backbone fail like CUDA does for batches above 2 windows."""
    model, tok = loaded["gpt_neox"]
    expected = extract_ranks(model, corpus, windows, len(tok), scoring(batch_size=2))
    calls: list[int] = []

    def limit(module: Any, args: tuple, kwargs: dict) -> None:
        rows = (kwargs.get("input_ids") if kwargs.get("input_ids") is not None else args[0]).shape[0]
        calls.append(rows)
        if rows > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    handle = model.base_model.register_forward_pre_hook(limit, with_kwargs=True)
    try:
        stats: dict[str, Any] = {}
        got = extract_ranks(model, corpus, windows, len(tok), scoring(batch_size=8), stats=stats)
    finally:
        handle.remove()
    assert stats["batch_size"] == 2 and 8 in calls and 4 in calls
    # stays exact: both scored every window in the same batches of 2 (one path, run twice)
    assert np.array_equal(got.rank, expected.rank) and np.array_equal(got.logprob, expected.logprob)


def test_other_errors_are_not_swallowed(loaded: dict[str, tuple[Any, Any]], corpus, windows) -> None:
    model, tok = loaded["gpt_neox"]

    def broken(module: Any, args: tuple, kwargs: dict) -> None:
        raise RuntimeError("CUBLAS_STATUS_EXECUTION_FAILED")

    handle = model.base_model.register_forward_pre_hook(broken, with_kwargs=True)
    try:
        with pytest.raises(RuntimeError, match="CUBLAS"):
            extract_ranks(model, corpus, windows, len(tok), scoring(batch_size=8))
    finally:
        handle.remove()


def test_auto_head_chunk_bounds_logit_memory() -> None:
    from rankscale.head import HEAD_CHUNK_BYTES, auto_head_chunk

    for columns in (320, 50304, 151936):
        rows = auto_head_chunk(columns)
        assert rows * columns * 4 <= max(HEAD_CHUNK_BYTES, 16 * columns * 4)
    assert auto_head_chunk(151936) == 110


class Float32Head(torch.nn.Module):
    """A reference for `head_dtype=float32`: the model's own backbone, a float32 copy of its head."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model
        head = model.get_output_embeddings()
        self.head = torch.nn.Linear(head.in_features, head.out_features, bias=head.bias is not None)
        self.head.load_state_dict({k: v.detach().float() for k, v in head.state_dict().items()})

    def get_output_embeddings(self) -> torch.nn.Linear:
        return self.head

    def forward(self, input_ids: torch.Tensor) -> Any:
        from types import SimpleNamespace

        hidden = self.model.base_model(input_ids=input_ids).last_hidden_state
        return SimpleNamespace(logits=self.head(hidden.float()))


def test_bfloat16_model_gets_a_float32_head(model_dirs: dict[str, Path], corpus: TokenizedCorpus, windows) -> None:
    model = cpu_model(source(model_dirs, "gpt_neox"), dtype="bfloat16")
    vocab = len(load_tokenizer(source(model_dirs, "gpt_neox")))
    # batch 1, one window a pass: both paths run the bfloat16 backbone on the same shapes, so only the
    # heads' float32 reductions (and, native, their rounding to bfloat16) differ between them
    fp32_head = extract_ranks(model, corpus, windows, vocab, scoring(batch_size=1))  # a float32 head
    assert_matches_reference(fp32_head, reference(Float32Head(model), corpus, windows, vocab))
    native = extract_ranks(model, corpus, windows, vocab, scoring(batch_size=1, head_dtype=None))
    bf16 = reference(model, corpus, windows, vocab, output_dtype=torch.bfloat16)
    # was exact; the head's chunk and the full pass round in float32, then to bfloat16 (its many exact ties
    # all count as near ties): equal but at near ties, the bound adding bfloat16's rounding u * |z|max
    assert_ranks_close(native.rank, bf16["rank"], bf16["tol"], "bfloat16 head: extraction vs reference")
    # bfloat16 logits (8-bit mantissa) tie with the target where float32 ones do not
    tied = (
        native.rank
        > extract_ranks(model, corpus, windows, vocab, scoring(ties="gt", batch_size=1, head_dtype=None)).rank
    )
    untied = fp32_head.rank > extract_ranks(model, corpus, windows, vocab, scoring(ties="gt", batch_size=1)).rank
    assert tied.mean() > 0.05 and untied.sum() == 0, (tied.mean(), untied.sum())


def test_target_after_an_added_bos_is_not_scored(
    tokenizer_dir: Path, model_dirs: dict[str, Path], tmp_path: Path
) -> None:
    """As OPT's tokenizer does: a BOS before every document; the token after it is never a target."""
    from tokenizers.processors import TemplateProcessing
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    base = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    backend = base.backend_tokenizer
    eos = "<|endoftext|>"
    backend.post_processor = TemplateProcessing(
        single=f"{eos} $A", special_tokens=[(eos, base.convert_tokens_to_ids(eos))]
    )
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=eos, eos_token=eos)
    docs = [Document(str(i), t) for i, t in enumerate(TEXTS)]
    with_bos, counts = tokenize_documents(docs, tok, add_special_tokens=True)
    plain, _ = tokenize_documents(docs, tok, add_special_tokens=False)
    assert with_bos.prefix is not None and with_bos.prefix.tolist() == [1] * counts["documents"]
    assert plain.prefix is None
    save_tokens(with_bos, tmp_path / "t.npz", {})
    np.testing.assert_array_equal(load_tokens(tmp_path / "t.npz").first_targets(), [2] * counts["documents"])
    assert counts["scored_targets"] == int((with_bos.doc_lengths() - 2).sum())
    model = cpu_model(source(model_dirs, "gpt2"))
    windows = plan_windows(with_bos.doc_lengths(), SPEC, with_bos.first_targets())
    arrays = extract_ranks(model, with_bos, windows, len(tok), scoring(batch_size=2))
    expected = [(d, p) for d, n in enumerate(with_bos.doc_lengths()) for p in range(2, int(n))]
    assert list(zip(arrays.doc.tolist(), arrays.pos.tolist(), strict=True)) == expected
    assert_matches_reference(arrays, reference(model, with_bos, windows, len(tok)))


def test_out_of_memory_is_recognised_on_every_backend() -> None:
    """The batch back-off must see a CPU allocator failure too, not only CUDA's typed error."""
    from rankscale.extract import is_out_of_memory

    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_out_of_memory(
        RuntimeError(
            "[enforce fail at alloc_cpu.cpp:121] DefaultCPUAllocator: can't allocate memory: you tried to allocate 1"
        )
    )
    assert is_out_of_memory(RuntimeError("MPS backend out of memory"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))

"""The CUDA path on a real GPU: float32 and bfloat16 (float32 head) extraction, a real out-of-memory back-off,
`device_map`, and the GPU slots' device names. Marked `cuda`; skipped where torch sees no CUDA device (CI).

`RANKSCALE_TEST_CUDA_ON_CPU=1` runs them on the CPU instead (all but the memory-limit test): a rehearsal of
the test code itself before a GPU session (benchmarks/gpu_session.sh), not a test of the CUDA path.
The CPU tests of the same code paths stay in tests/test_extract.py (simulated out-of-memory, bfloat16 head).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, GPTNeoXConfig

from rankscale.corpus import Document
from rankscale.extract import extract_ranks
from rankscale.gpu_slots import cuda_device_ids
from rankscale.ladder import train_tokenizer
from rankscale.models import ModelSource, check_device, load_model, load_tokenizer
from rankscale.sources.packaged import pydoc_documents
from rankscale.tokens import TokenizedCorpus, tokenize_documents
from rankscale.windows import Windows, WindowSpec, plan_windows
from tests.test_extract import (
    ARCHS,
    SPEC,
    TEXTS,
    Float32Head,
    assert_matches_reference,
    make_config,
    reference,
    scoring,
)
from tests.tolerances import (
    assert_calibration_close,
    assert_ranks_close,
    brute_force_calibration,
    calibration_tolerance,
)

REHEARSAL = os.environ.get("RANKSCALE_TEST_CUDA_ON_CPU") == "1"
DEVICE = "cpu" if REHEARSAL else "cuda"
pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not REHEARSAL and not torch.cuda.is_available(), reason="needs a CUDA device"),
]


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny models of tests/test_extract.py (4 architectures, padded heads), saved with their tokenizer."""
    from transformers import AutoTokenizer

    tok_dir = tmp_path_factory.mktemp("tokenizer")
    docs = [Document(str(i), t) for i, t in enumerate(TEXTS)] + list(pydoc_documents())[:20]
    train_tokenizer(docs, 300, tok_dir)
    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    dirs = {}
    for i, arch in enumerate(ARCHS):
        torch.manual_seed(100 + i)
        out = tmp_path_factory.mktemp(arch)
        AutoModelForCausalLM.from_config(make_config(arch, tok.eos_token_id)).save_pretrained(str(out))
        tok.save_pretrained(str(out))
        dirs[arch] = out
    return dirs


def loaded(path: Path, dtype: str = "float32", device: str = DEVICE, device_map: str | None = None) -> Any:
    """The model as an extraction job loads it (the workflow's loader)."""
    where = ModelSource.directory(path.name, str(path))
    return load_model(where, dtype=dtype, device=device, device_map=device_map, attn_implementation=None)


@pytest.fixture(scope="module")
def corpus(model_dirs: dict[str, Path]) -> TokenizedCorpus:
    tok = load_tokenizer(ModelSource.directory("t", str(model_dirs["gpt_neox"])))
    tokenized, _ = tokenize_documents([Document(str(i), t) for i, t in enumerate(TEXTS)], tok, add_special_tokens=False)
    return tokenized


@pytest.fixture(scope="module")
def windows(corpus: TokenizedCorpus) -> Windows:
    return plan_windows(corpus.doc_lengths(), SPEC)


def vocab(path: Path) -> int:
    return len(load_tokenizer(ModelSource.directory("t", str(path))))


@pytest.mark.parametrize("arch", ARCHS)
def test_float32_on_the_gpu_matches_the_cpu_reference(arch: str, model_dirs: dict[str, Path], corpus, windows) -> None:
    """Batched GPU extraction against per-window passes of the same weights on the CPU: two devices' kernels
    round differently, so the float32 bounds of tests/tolerances.py, as for two CPUs."""
    gpu = loaded(model_dirs[arch])
    assert next(gpu.parameters()).device.type == DEVICE
    got = extract_ranks(gpu, corpus, windows, vocab(model_dirs[arch]), scoring(batch_size=4))
    cpu = loaded(model_dirs[arch], device="cpu")
    assert_matches_reference(got, reference(cpu, corpus, windows, vocab(model_dirs[arch])))


def test_bfloat16_on_the_gpu_gets_a_float32_head(model_dirs: dict[str, Path], corpus, windows) -> None:
    """bfloat16 weights on the GPU, logits from a float32 copy of the head: against per-window passes of the
    same bfloat16 backbone on the same GPU with a float32 head (only the heads' float32 reductions differ);
    a head left in bfloat16 ties far more often, as on the CPU."""
    path = model_dirs["gpt_neox"]
    model = loaded(path, dtype="bfloat16")
    assert next(model.parameters()).dtype == torch.bfloat16
    n = vocab(path)
    fp32_head = extract_ranks(model, corpus, windows, n, scoring(batch_size=1))
    assert_matches_reference(fp32_head, reference(Float32Head(model).to(DEVICE), corpus, windows, n))
    native = extract_ranks(model, corpus, windows, n, scoring(batch_size=1, head_dtype=None))
    native_gt = extract_ranks(model, corpus, windows, n, scoring(ties="gt", batch_size=1, head_dtype=None))
    fp32_gt = extract_ranks(model, corpus, windows, n, scoring(ties="gt", batch_size=1))
    assert (native.rank > native_gt.rank).mean() > 0.05 and (fp32_head.rank > fp32_gt.rank).sum() == 0


def test_device_map_auto_loads_onto_the_gpu_with_the_same_ranks(model_dirs: dict[str, Path], corpus, windows) -> None:
    """`device_map: auto` (transformers + accelerate) puts a model that fits on the one GPU; its ranks are the
    plain load's, bit for bit (same device, same kernels, same batches)."""
    if REHEARSAL:
        pytest.skip("device_map places models on accelerators only")
    path = model_dirs["qwen2"]
    mapped = loaded(path, dtype="bfloat16", device="auto", device_map="auto")
    # transformers sets hf_device_map only when it spreads a model (5.17 on an H200 left it unset here)
    assert {p.device for p in mapped.parameters()} == {torch.device("cuda", 0)}
    plain = loaded(path, dtype="bfloat16")
    n = vocab(path)
    a = extract_ranks(mapped, corpus, windows, n, scoring(batch_size=4))
    b = extract_ranks(plain, corpus, windows, n, scoring(batch_size=4))
    assert np.array_equal(a.rank, b.rank) and np.array_equal(a.logprob, b.logprob)


def test_a_real_out_of_memory_halves_the_batch_and_loses_nothing(tmp_path: Path, caplog) -> None:
    """The GPU's own allocator refuses the batch (a per-process memory cap a little above the loaded model):
    extraction halves the batch until it fits, keeps what it scored, and gives the ranks and log-probs of an
    unconstrained run at the batch size it settled on, bit for bit."""
    if REHEARSAL:
        pytest.skip("torch.cuda.set_per_process_memory_fraction has no CPU counterpart")
    config = GPTNeoXConfig(vocab_size=4096, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=1024, max_position_embeddings=1024, rotary_pct=0.25)  # fmt: skip
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).to(DEVICE).eval()
    length, count = 1024, 64
    ids = np.random.default_rng(0).integers(0, 4096, size=length * count).astype(np.int32)
    corpus = TokenizedCorpus(ids, np.arange(0, length * count + 1, length, dtype=np.int64))
    windows = plan_windows(corpus.doc_lengths(), WindowSpec(length, stride=None, max_windows_per_doc=None))
    torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory
    cap = torch.cuda.memory_reserved() + 256 * 2**20  # a batch of 64 windows needs over 512 MiB (its MLP alone)
    stats: dict[str, Any] = {}
    torch.cuda.set_per_process_memory_fraction(cap / total)
    try:
        got = extract_ranks(model, corpus, windows, 4096, scoring(batch_size=count), stats=stats)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        torch.cuda.empty_cache()
    assert 1 <= stats["batch_size"] < count, stats
    assert "out of memory: retrying with batch size" in caplog.text
    free = extract_ranks(model, corpus, windows, 4096, scoring(batch_size=stats["batch_size"]))
    assert np.array_equal(got.rank, free.rank) and np.array_equal(got.logprob, free.logprob)
    wide = extract_ranks(model, corpus, windows, 4096, scoring(batch_size=count))  # other shapes: rounding only
    tol = reference_tolerance(model, corpus, windows)
    assert_ranks_close(wide.rank, free.rank, tol, "batch 64 (no cap) vs the back-off's batch")


def reference_tolerance(model: Any, corpus: TokenizedCorpus, windows: Windows) -> Any:
    """Per-token float32 bounds from per-window passes (tests/tolerances.py), for comparing two batchings."""
    return reference(model, corpus, windows, 4096)["tol"]


def test_gpu_slots_name_the_real_devices() -> None:
    """The slot locks are named for each visible device's UUID as nvidia-smi reports it (one lock per physical
    GPU, whatever CUDA_VISIBLE_DEVICES renumbers), and `device: cuda` passes the job's device check."""
    if REHEARSAL:
        pytest.skip("no GPU to name")
    smi = shutil.which("nvidia-smi")
    if smi is None:
        pytest.skip("nvidia-smi is not on the PATH")
    listed = re.findall(r"UUID: (GPU-[0-9a-f-]+)", subprocess.run([smi, "-L"], capture_output=True, text=True).stdout)
    assert cuda_device_ids() == listed[: torch.cuda.device_count()] and listed
    check_device("cuda", "m", "models[0].device")
    check_device("cuda:0", "m", "models[0].device")


FUSED_RUNS = not REHEARSAL or os.environ.get("TRITON_INTERPRET") == "1"  # a CPU rehearsal needs Triton's interpreter


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("arch", ARCHS)
def test_fused_and_chunked_kernels_agree_on_the_gpu(arch: str, dtype: str, model_dirs: dict[str, Path], corpus,
                                                    windows) -> None:  # fmt: skip
    """The fused rank kernel (tensor-core tiles) and the chunked head against the same per-window reference,
    and against each other: equal ranks within the float32 bounds, in float32 and in bfloat16 (float32 head)."""
    if not FUSED_RUNS:
        pytest.skip("the fused kernel runs on a CPU only under TRITON_INTERPRET=1")
    path = model_dirs[arch]
    model = loaded(path, dtype=dtype)
    n = vocab(path)
    stats: dict[str, Any] = {}
    fused = extract_ranks(model, corpus, windows, n, scoring(batch_size=4, kernel="fused"), stats)
    assert stats["kernel"] == "fused"
    chunked = extract_ranks(model, corpus, windows, n, scoring(batch_size=4, kernel="chunked"))
    ref = reference(Float32Head(model).to(DEVICE) if dtype == "bfloat16" else model, corpus, windows, n)
    assert_matches_reference(fused, ref)
    assert_matches_reference(chunked, ref)
    assert_ranks_close(fused.rank, chunked.rank, ref["tol"], f"{arch} {dtype}: fused vs chunked")


@pytest.mark.parametrize("ties", ["ge", "gt"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("columns", [320] if REHEARSAL else [50304, 151936, 262144])
def test_fused_kernel_exact_on_constructed_ties_on_the_gpu(columns: int, dtype: torch.dtype, ties: str) -> None:
    """Heads and hidden states of quarters: every logit exact whatever the tiles' sum order, so the fused
    kernel's ranks (with twin rows: exact ties) equal the brute-force count, at the real heads' widths."""
    if not FUSED_RUNS:
        pytest.skip("the fused kernel runs on a CPU only under TRITON_INTERPRET=1")
    from rankscale.fused_rank import FusedRankHead

    gen = torch.Generator().manual_seed(columns)
    vocab_size, rows, d = columns - 27, 300, 64
    weight = torch.randint(-3, 4, (columns, d), generator=gen).float() / 4
    hidden = torch.randint(-3, 4, (rows, d), generator=gen).float() / 4
    targets = torch.randint(0, vocab_size, (rows,), generator=gen)
    weight[targets[1]] = weight[targets[0]]
    weight[vocab_size:] = 8.0 * hidden.sum(0).sign()  # padded columns above every target: never counted
    logits = (hidden.double() @ weight.double().T)[:, :vocab_size]
    zt = logits.gather(1, targets[:, None])
    expected = (logits >= zt).sum(1) if ties == "ge" else (logits > zt).sum(1) + 1
    head = FusedRankHead(weight.to(DEVICE, dtype), None, vocab_size, ties)
    scores = head(hidden.to(DEVICE, dtype), targets.to(DEVICE)).to("cpu")
    np.testing.assert_array_equal(scores.rank.numpy(), expected.numpy())
    lp = torch.log_softmax(logits, 1).gather(1, targets[:, None])[:, 0]
    np.testing.assert_allclose(scores.logprob.double().numpy(), lp.numpy(), rtol=0, atol=1e-3)
    # exact logits: the calibration fields against the definition (float64 softmax), ties included
    got = {"mass_above": scores.mass_above.numpy(), "top1_logprob": scores.top1_logprob.numpy(),
           "entropy": scores.entropy.numpy()}  # fmt: skip
    assert_calibration_close(got, brute_force_calibration(logits, targets, ties),
                             calibration_tolerance(logits.float(), targets, paths=1), f"fused on the GPU, {columns}")  # fmt: skip

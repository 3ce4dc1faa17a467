"""config/paper.yaml: the paper's grid, checked offline.

- every listed S against the architecture instantiated on the meta device, and against the
  closed form L(12d² + 13d) + 2d where it applies;
- the plan Snakemake builds from it (models, tokenizers, both windowing modes);
- every dataset entry through the real hub loader on local copies with the hub's schema.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets
import pytest
import yaml
from transformers import AutoConfig

from rankscale.config import validate
from rankscale.documents import load_documents, provenance, resolve_revision
from rankscale.params import non_embedding_from_config
from rankscale.plan import build_plan
from rankscale.sources.packaged import humaneval_documents
from rankscale.tables import TABLES
from tests import hub_fixtures
from tests.conftest import REPO, copy_workflow, files, planned_jobs, study_figures

PAPER = yaml.safe_load((REPO / "config/paper.yaml").read_text())
ARCHITECTURES = yaml.safe_load((REPO / "tests/data/paper_architectures.yaml").read_text())
MODELS = {m["name"]: m for m in PAPER["models"]}
FULL = ("wikipedia", "humaneval", "hotpotqa", "legal")


def meta_count(name: str) -> Any:
    arch = dict(ARCHITECTURES[name])
    return non_embedding_from_config(AutoConfig.for_model(arch.pop("model_type"), **arch))


def test_grid_is_the_papers() -> None:
    families = {}
    for m in PAPER["models"]:
        families.setdefault(m["family"], []).append(m["name"])
    assert families == {
        "pythia": [f"pythia-{s}" for s in ("14m", "31m", "70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b", "12b")],
        "gpt2": ["gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"],
        "opt": [f"opt-{s}" for s in ("125m", "350m", "1.3b", "2.7b", "6.7b", "13b")],
        "qwen2.5": [f"qwen2.5-{s}" for s in ("0.5b", "1.5b", "3b", "7b", "14b")],
    }
    assert set(ARCHITECTURES) == set(MODELS)
    assert set(PAPER["datasets"]) == set(FULL) | {f"{d}-authors" for d in FULL}


@pytest.mark.parametrize("name", list(MODELS))
def test_listed_size_matches_the_architecture(name: str) -> None:
    entry, arch = MODELS[name], ARCHITECTURES[name]
    count = meta_count(name)
    assert entry["S"] == count.non_embedding
    assert count.non_embedding == count.total - count.token_embedding - count.output_head - count.position_embedding
    columns = arch["vocab_size"]
    assert entry["vocab_size"] <= columns  # the tokenizer never exceeds the output layer
    # one tokenizer per family; the output layers are padded beyond it (ranks ignore the padding)
    assert entry["vocab_size"] == {"pythia": 50277, "gpt2": 50257, "opt": 50265, "qwen2.5": 151665}[entry["family"]]
    tied = arch.get("tie_word_embeddings", arch["model_type"] in ("gpt2", "opt"))
    assert (count.output_head == 0) == tied  # an untied head is not part of S
    # closed form for pre-LayerNorm blocks with a 4d MLP and biases everywhere (docs/science.md)
    if arch["model_type"] in ("gpt_neox", "gpt2") or (arch["model_type"] == "opt" and arch["do_layer_norm_before"]):
        d = arch.get("hidden_size", arch.get("n_embd"))
        layers = arch.get("num_hidden_layers", arch.get("n_layer"))
        assert entry["S"] == layers * (12 * d * d + 13 * d) + 2 * d


def test_published_sizes() -> None:
    """S published elsewhere: Pythia in docs/science.md; the others in the paper authors' parameter table."""
    published = {
        "pythia-70m": 18_915_328,
        "pythia-160m": 85_056_000,
        "pythia-410m": 302_311_424,
        "pythia-1b": 805_736_448,
        "pythia-1.4b": 1_208_602_624,
        "pythia-2.8b": 2_517_652_480,
        "pythia-6.9b": 6_444_163_072,
        "pythia-12b": 11_327_027_200,
        "gpt2-xl": 1_475_561_600,
        "opt-350m": 303_357_952,
        "opt-6.7b": 6_444_163_072,
        "qwen2.5-0.5b": 357_898_112,
        "qwen2.5-1.5b": 1_310_340_608,
        "qwen2.5-3b": 2_774_773_760,
        "qwen2.5-7b": 6_525_621_760,  # untied head: transformers' exclude_embeddings count keeps it
        "qwen2.5-14b": 13_212_898_304,
    }
    for name, s in published.items():
        assert MODELS[name]["S"] == s, name
        assert meta_count(name).non_embedding == s, name


def test_runtime_settings_follow_size() -> None:
    ordered = sorted(PAPER["models"], key=lambda m: m["S"])
    for small, large in zip(ordered, ordered[1:], strict=False):
        assert small["mem_mb"] <= large["mem_mb"] and small["runtime"] <= large["runtime"]
        assert small["gpus"] <= large["gpus"] and small["batch_size"] >= large["batch_size"]
    for m in PAPER["models"]:
        assert m["dtype"] == ("bfloat16" if m["S"] > 5e9 else "float32"), m["name"]
        assert (m.get("device_map") == "auto") == (m["gpus"] > 1), m["name"]


def test_plan_and_dry_run(tmp_path: Path) -> None:
    validate(copy.deepcopy(PAPER))
    plans = build_plan(PAPER, check_paths=False)
    assert len(plans) == 25
    # one tokenizer for Pythia, GPT-2 and OPT (as the authors did); each Qwen2.5 its own
    assert {p.tokenizer_key for p in plans.values()} == {
        "EleutherAI--pythia-14m",
        "openai-community--gpt2",
        "facebook--opt-125m",
        *(f"Qwen--Qwen2.5-{s}@main" for s in ("0.5B", "1.5B", "3B", "7B", "14B")),
    }
    for plan in plans.values():
        for d in FULL:
            assert plan.windows_for(d) == {"max_length": 1024, "stride": 512, "max_windows_per_doc": None}
            assert plan.windows_for(f"{d}-authors") == {"max_length": 512, "stride": None, "max_windows_per_doc": 1}
        # bfloat16 models get a float32 head; for float32 models the key is left out (no effect)
        assert plan.identity("wikipedia").head_dtype == ("float32" if plan.settings["dtype"] == "bfloat16" else None)
        assert plan.identity("wikipedia").revision == "main"
    # Snakemake plans the whole grid offline: 25 models x 8 datasets, 8 tokenizers x 8 datasets
    workdir = copy_workflow(tmp_path / "wf")
    jobs = planned_jobs(workdir, "--cores", "8", "--configfile", "config/paper.yaml")
    by_rule: dict[str, int] = {}
    for key, n in jobs.items():
        by_rule[key.split("[")[0]] = by_rule.get(key.split("[")[0], 0) + n
    assert by_rule == {
        "download": 28,  # 25 models and 3 tokenizers of repositories of their own, once each
        "corpus": 8,
        "tokenize": 64,
        "token_kinds": 8,  # one per tokenizer: the `kind` stratum
        "extract": 200,
        "summarize": 200,
        "trajectories": len({p.family for p in plans.values()}) * 8,  # one per family x dataset
        "table": len(TABLES),
        "figure": len(study_figures((REPO, "config/paper.yaml"))),  # no checkpoints, no seeds: not Figs. 10-12
        "all": 1,
    }


# --- every paper dataset entry through the hub loader, on local copies with the hub's schema --


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    # datasets caches a local repository's build under a key blind to the data's content: keep it private
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("datasets-cache"))
        yield hub_fixtures.local_hub(tmp_path_factory.mktemp("hub"))


def local_entry(name: str, hub: dict[str, Path]) -> dict[str, Any]:
    spec = copy.deepcopy(PAPER["datasets"][name])
    spec["path"] = str(hub[spec["path"]])
    return spec


def rows(hub: dict[str, Path], hub_id: str, config: str | None, split: str) -> datasets.Dataset:
    return datasets.load_dataset(str(hub[hub_id]), config, split=split)


def test_fixture_schemas_are_the_hubs(hub: dict[str, Path]) -> None:
    hotpot = rows(hub, "hotpotqa/hotpot_qa", "distractor", "validation")
    assert hotpot.features == hub_fixtures.HOTPOTQA
    assert isinstance(hotpot[0]["context"]["sentences"][0], list)  # paragraphs of sentences
    assert rows(hub, "openai/openai_humaneval", None, "test").column_names == [
        "task_id",
        "prompt",
        "canonical_solution",
        "test",
        "entry_point",
    ]
    assert rows(hub, "wikimedia/wikipedia", "20231101.en", "train").column_names == ["id", "url", "title", "text"]
    assert "version_id" in rows(hub, "isaacus/open-australian-legal-corpus", None, "corpus").column_names


def test_humaneval_from_the_hub_is_the_packaged_one(hub: dict[str, Path]) -> None:
    full = load_documents(local_entry("humaneval", hub), "datasets.humaneval")
    assert [(d.id, d.text) for d in full] == [(d.id, d.text) for d in humaneval_documents()]
    authors = load_documents(local_entry("humaneval-authors", hub), "datasets.humaneval-authors")
    problems = {r["task_id"]: r for r in rows(hub, "openai/openai_humaneval", None, "test")}
    assert len(authors) == 164 and [d.id for d in authors] != [d.id for d in full]  # all, shuffled
    assert all(d.text == problems[d.id]["prompt"] + "\n" + problems[d.id]["canonical_solution"] for d in authors)


def test_hotpotqa_texts(hub: dict[str, Path]) -> None:
    ds = rows(hub, "hotpotqa/hotpot_qa", "distractor", "validation")
    first = ds.shuffle(seed=42)[0]
    full = load_documents(local_entry("hotpotqa", hub), "datasets.hotpotqa")
    assert len(full) == len(ds)
    paragraphs = "\n\n".join("".join(s) for s in first["context"]["sentences"])
    assert full[0].id == first["id"]
    assert full[0].text == f"{first['question']}\n\n{paragraphs}\n\n{first['answer']}"
    assert "founded in" in full[0].text and "north. It was" in full[0].text  # sentences rejoined
    # the authors' selection: shuffle(seed=42) of the whole split, first 1000, question \n answer
    authors = load_documents(local_entry("hotpotqa-authors", hub), "datasets.hotpotqa-authors")
    expected = ds.shuffle(seed=42).select(range(1000))
    assert [d.id for d in authors] == expected["id"]
    assert [d.text for d in authors] == [
        f"{q}\n{a}" for q, a in zip(expected["question"], expected["answer"], strict=True)
    ]


@pytest.mark.parametrize(
    ("name", "hub_id", "config", "split", "id_field"),
    [
        ("wikipedia", "wikimedia/wikipedia", "20231101.en", "train", "id"),
        ("legal", "isaacus/open-australian-legal-corpus", None, "corpus", "version_id"),
    ],
)
def test_streamed_corpora(
    hub: dict[str, Path], name: str, hub_id: str, config: str | None, split: str, id_field: str
) -> None:
    texts = {r[id_field]: r["text"] for r in rows(hub, hub_id, config, split)}
    full = load_documents(local_entry(name, hub), f"datasets.{name}")
    again = load_documents(local_entry(name, hub), f"datasets.{name}")
    assert [d.id for d in full] == [d.id for d in again]  # the seeded streamed shuffle is reproducible
    assert all(texts[d.id] == d.text for d in full)
    assert [d.id for d in full] != list(texts)[: len(full)]  # shuffled
    authors = load_documents(local_entry(f"{name}-authors", hub), f"datasets.{name}-authors")
    assert len(authors) == min(1000, len(texts))
    n = min(len(authors), len(full))  # the full-coverage entry is cut at max_bytes, the authors' at 1000 documents
    assert n > 0 and [d.id for d in authors][:n] == [d.id for d in full][:n]  # same seed, same order


def test_dataset_provenance(hub: dict[str, Path]) -> None:
    spec = local_entry("wikipedia", hub)
    assert resolve_revision(spec) is None  # a local copy has no commit; its SHA-256 identifies it
    assert provenance(spec, None)["resolved_revision"] == "local directory"
    pinned = {**PAPER["datasets"]["wikipedia"], "revision": "b04c8d1ceb2f5cd4588862100d08de323dccfbaa"}
    assert resolve_revision(pinned) == pinned["revision"]  # a commit needs no look-up
    record = provenance(pinned, pinned["revision"])
    assert record == {
        "source": "hub",
        "path": "wikimedia/wikipedia",
        "config": "20231101.en",
        "split": "train",
        "revision": pinned["revision"],
        "resolved_revision": pinned["revision"],
    }


# --- the paper's configuration run for real, hub ids swapped for local copies ------------------


def tiny_models(root: Path, hub: dict[str, Path]) -> list[dict[str, Any]]:
    """Two tiny GPT-NeoX models (1024 positions, padded output layer) and their tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GPTNeoXConfig

    from rankscale.ladder import train_tokenizer
    from rankscale.params import count_parameters

    docs = (
        load_documents(local_entry("wikipedia", hub), "w")[:200] + load_documents(local_entry("legal", hub), "l")[:50]
    )
    train_tokenizer(docs, 400, root / "tokenizer")
    tok = AutoTokenizer.from_pretrained(str(root / "tokenizer"))
    entries = []
    for i, (d, layers) in enumerate([(16, 1), (32, 2)]):
        torch.manual_seed(i)
        config = GPTNeoXConfig(
            vocab_size=416,  # padded beyond the tokenizer, like Pythia's output layer
            hidden_size=d,
            num_hidden_layers=layers,
            num_attention_heads=2,
            intermediate_size=4 * d,
            max_position_embeddings=1024,
            tie_word_embeddings=False,
            eos_token_id=tok.eos_token_id,
            bos_token_id=tok.eos_token_id,
        )
        model = AutoModelForCausalLM.from_config(config)
        out = root / f"tiny-{d}"
        model.save_pretrained(str(out))
        tok.save_pretrained(str(out))
        entries.append(
            {
                "name": f"tiny-{d}",
                "family": "tiny",
                "path": str(out),
                "tokenizer": str(root / "tokenizer"),
                "S": count_parameters(model).non_embedding,
                "vocab_size": len(tok),
                "dtype": "float32",
                "batch_size": 4,
                "gpus": 0,
            }
        )
    return entries


@pytest.mark.slow
def test_paper_config_end_to_end_on_local_copies(tmp_path: Path, hub: dict[str, Path]) -> None:
    import json
    import os

    import numpy as np

    from tests.conftest import snakemake

    workdir = copy_workflow(tmp_path / "wf")
    config = copy.deepcopy(PAPER)
    for spec in config["datasets"].values():
        spec["path"] = str(hub[spec["path"]])
        spec["max_documents"] = min(spec.get("max_documents") or 20, 20)
        if spec.get("max_bytes"):
            spec["max_bytes"] = 16_000
    config["models"] = tiny_models(tmp_path / "models", hub)
    config["extraction"].update(device="cpu", threads=1)
    (workdir / "config/paper-local.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    os.environ.setdefault("HF_DATASETS_CACHE", str(tmp_path / "datasets-cache"))
    # up to metrics.csv: the paper's tables and figures are built from these summaries as every other configuration's
    # are (tests/test_workflow.py); what this test checks is the corpora, windows and rank arrays of the paper's grid
    metrics_csv = "results/paper-local/tables/metrics.csv"
    result = snakemake(workdir, metrics_csv, "--cores", "2", "--configfile", "config/paper-local.yaml")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]

    from rankscale.tokens import load_tokens

    local = files(workdir, "config/paper-local.yaml")
    for dataset in config["datasets"]:
        corpus_meta = json.loads((workdir / local.corpus(dataset, "json")).read_text())
        assert corpus_meta["source"] == "hub" and corpus_meta["resolved_revision"] == "local directory"
        for model in ("tiny-16", "tiny-32"):
            meta = json.loads((workdir / local.ranks(model, dataset, "json")).read_text())
            assert meta["dataset_revision"] == "local directory" and "head_dtype" not in meta  # float32 model
            # a `path:` model: the plan's weights digest (hashed once per version of the files), not a second hash
            assert meta["resolved_revision"] == f"weights:{meta['weights_sha256']}" and meta["weights_sha256"]
            arrays = np.load(workdir / local.ranks(model, dataset))
            lengths = load_tokens(workdir / local.tokens(meta["tokenizer_key"], dataset)).doc_lengths()
            if dataset.endswith("-authors"):  # one 512-token window per document: targets 1..511
                assert meta["windows"] == {"max_length": 512, "stride": None, "max_windows_per_doc": 1}
                expected = np.minimum(lengths, 512) - 1
            else:  # full coverage: every target of every document, once
                assert meta["windows"] == {"max_length": 1024, "stride": 512, "max_windows_per_doc": None}
                expected = lengths - 1
            np.testing.assert_array_equal(np.bincount(arrays["doc"], minlength=len(lengths)), expected)
    authors = np.load(workdir / local.ranks("tiny-32", "wikipedia-authors"))
    full = np.load(workdir / local.ranks("tiny-32", "wikipedia"))
    assert authors["pos"].max() == 511 and full["pos"].max() > 1023  # long articles: truncated vs covered
    import pandas as pd

    metrics = pd.read_csv(workdir / metrics_csv)
    assert set(zip(metrics["model"], metrics["dataset"], strict=True)) == {
        (m, d) for m in ("tiny-16", "tiny-32") for d in config["datasets"]
    }


def test_dataset_revision_offline_and_online(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    from rankscale.corpus import CorpusError

    spec = {"source": "hub", "path": "wikimedia/wikipedia", "name": "20231101.en", "revision": "main"}
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert resolve_revision(spec) is None  # offline, nothing cached: unknown, not invented
    refs = tmp_path / "datasets--wikimedia--wikipedia" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text("b04c8d1ceb2f5cd4588862100d08de323dccfbaa\n")
    assert resolve_revision(spec) == "b04c8d1ceb2f5cd4588862100d08de323dccfbaa"  # the warm cache's commit
    # online, a failed look-up stops the corpus job instead of reading a moving branch
    monkeypatch.delenv("HF_DATASETS_OFFLINE")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    with pytest.raises(CorpusError, match=r"datasets.wiki: could not resolve revision 'main' of hub dataset"):
        resolve_revision(spec, "datasets.wiki")


PYTHIA_TRAINING = yaml.safe_load((REPO / "config/pythia_training.yaml").read_text())
TOKENS_PER_STEP = 2_097_152  # Pythia: 1024 sequences x 2048 tokens per optimizer step


def test_pythia_training_grid_plans_offline(tmp_path: Path) -> None:
    """Sizes x published training steps: D from the step, the released model (step 143000) final, S as published."""
    plans = build_plan(PYTHIA_TRAINING, check_paths=False)
    assert len(plans) == 25 and {p.size for p in plans.values()} == {
        f"pythia-{s}" for s in ("70m", "160m", "410m", "1b", "1.4b")
    }
    published = {m["name"]: m["S"] for m in PAPER["models"]}
    for name, plan in plans.items():
        step = int(name.rsplit("step", 1)[1])
        assert plan.D == step * TOKENS_PER_STEP and plan.source.revision == f"step{step}"
        assert plan.final == (step == 143000)
        assert plan.expected_size == published[plan.size]  # the same S as the paper grid (checked there on meta)
    assert {p.tokenizer_key for p in plans.values()} == {"EleutherAI--pythia-70m"}  # one tokenization per dataset
    workdir = copy_workflow(tmp_path / "wf")
    jobs = planned_jobs(workdir, "--cores", "8", "--configfile", "config/pythia_training.yaml")
    by_rule: dict[str, int] = {}
    for key, n in jobs.items():
        by_rule[key.split("[")[0]] = by_rule.get(key.split("[")[0], 0) + n
    assert by_rule == {
        "download": 26,  # 25 checkpoints (revisions) and the tokenizer they share, once each
        "corpus": 2,
        "tokenize": 2,
        "token_kinds": 1,
        "extract": 50,
        "summarize": 50,
        "trajectories": 2,  # one family (pythia) x 2 datasets
        "table": len(TABLES),
        "figure": len(study_figures((REPO, "config/pythia_training.yaml"))),  # one seed: not Fig. 12
        "all": 1,
    }

"""No evaluated text in the ladder's training text: checked on the shipped configurations through the
real corpus code (the functions the `corpus` and `ladder_corpus` rules call)."""

from __future__ import annotations

import pytest
import yaml

from rankscale.config import validate
from rankscale.corpus import Document
from rankscale.documents import load_documents
from rankscale.overlap import SPAN, disjoint_training_documents, shared_stretches, span_index
from rankscale.sources.packaged import pydoc_documents, stdlib_documents
from tests.conftest import REPO


def test_shared_stretches_are_cut_and_pieces_kept_apart() -> None:
    evaluated = [Document("e", "x" * 20 + "THE SECRET " * 12 + "y" * 20)]
    secret = "THE SECRET " * 12
    training = [Document("t", "a" * 150 + secret + "b" * 150), Document("u", "clean " * 40)]
    docs, report = disjoint_training_documents(training, evaluated, span=50)
    assert [d.id for d in docs] == ["t#0", "t#1", "u"]
    assert docs[0].text == "a" * 150 and docs[1].text == "b" * 150
    assert report["characters_removed"] == len(secret)
    assert shared_stretches("zz" + secret[:60], span_index([secret], 50), 50) == [(2, 62)]


def test_the_standard_library_corpus_leaves_out_the_documentation_topics() -> None:
    """pydoc_data/topics.py holds the `pydoc_topics` corpus as string literals: never a training file."""
    assert not [d.id for d in stdlib_documents() if "pydoc_data" in d.id]


@pytest.mark.parametrize("name", ["config.yaml", "smoke.yaml"])
def test_no_evaluated_span_appears_in_the_training_text(name: str) -> None:
    config = validate(yaml.safe_load((REPO / "config" / name).read_text()))
    evaluated = [doc for key, spec in config["datasets"].items() for doc in load_documents(spec, f"datasets.{key}")]
    training = [doc for i, spec in enumerate(config["ladder"]["corpus"]) for doc in load_documents(spec, f"c{i}")]
    raw_hits = sum(bool(shared_stretches(d.text, span_index(e.text for e in evaluated))) for d in training)
    if name == "config.yaml":  # without the filter the pydoc topics do share text (they quote each other);
        assert raw_hits > 0  # smoke.yaml's pydoc is cut at 24 kB of text, too little to share any
    docs, report = disjoint_training_documents(training, evaluated)
    index = span_index(e.text for e in evaluated)
    leaks = [(d.id, i) for d in docs for i in range(len(d.text) - SPAN + 1) if d.text[i : i + SPAN] in index]
    assert not leaks, leaks[:5]
    assert report["characters_removed"] < 0.05 * report["characters"]  # a cut, not a purge
    if name == "config.yaml":  # the held-out documentation keeps its size: 30% of the topics
        heldout = [d for d in evaluated if d.id.startswith("pydoc:")]
        assert len(heldout) >= 0.2 * len(list(pydoc_documents()))

"""Resumable ladder runs (rankscale.training): a checkpoint resumed from a saved state, or exported from one,
is bit-identical to the same run trained straight through; states of another configuration are never used."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

from rankscale.ladder import SizeSpec, TrainSpec, train_tokenizer
from rankscale.sources.packaged import pydoc_documents
from rankscale.tokens import TokenizedCorpus, tokenize_documents
from rankscale.training import Run, saved_steps, train_model

STEPS = 24  # of the whole run: 24 steps of 4 x 32 tokens


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[TokenizedCorpus, int, int]:
    docs = [d for d, _ in zip(pydoc_documents(), range(40), strict=False)]
    tokenizer = train_tokenizer(docs, 400, tmp_path_factory.mktemp("tok"))
    tokenized, _ = tokenize_documents(docs, tokenizer, add_special_tokens=False)
    return tokenized, len(tokenizer), tokenizer.eos_token_id


def run_of(corpus: tuple[TokenizedCorpus, int, int], seed: int = 0, lr: float = 3e-3) -> Run:
    _, vocab, eos = corpus
    train = TrainSpec(tokens=STEPS * 4 * 32, seq_len=32, batch_size=4, lr=lr, warmup_steps=3, weight_decay=0.1,
                      seed=seed)  # fmt: skip
    return Run(SizeSpec("tiny", layers=2, d_model=16, heads=2), train, vocab, eos, tokens_sha256="t")


def weights(path: Path) -> dict[str, np.ndarray]:
    return load_file(path / "model.safetensors")


def assert_identical(a: Path, b: Path) -> None:
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for name in wa:
        np.testing.assert_array_equal(wa[name], wb[name], err_msg=name)  # bit for bit, not close


def train(run: Run, corpus, out: Path, states: Path, stop_at: int | None, save_at: list[int]) -> dict:
    torch.set_num_threads(1)
    out.mkdir(parents=True)
    return train_model(run, corpus[0], out, states, stop_at=stop_at, save_at=save_at)


def test_a_checkpoint_resumed_from_a_saved_state_is_bit_identical_to_a_straight_run(corpus, tmp_path: Path) -> None:
    run = run_of(corpus)
    # straight: the checkpoint at 16 steps trained from step 0, with nothing saved on the way
    straight = train(run, corpus, tmp_path / "straight", tmp_path / "states-a", stop_at=16 * 128, save_at=[])
    assert straight["resumed_from_step"] == 0 and straight["trained_steps"] == 16
    # resumed: a run that saved its state at step 8, then the checkpoint at step 16 resumed from it
    states = tmp_path / "states-b"
    first = train(run, corpus, tmp_path / "first", states, stop_at=8 * 128, save_at=[8 * 128])
    assert first["trained_steps"] == 8 and saved_steps(run.states(states)) == [8]
    resumed = train(run, corpus, tmp_path / "resumed", states, stop_at=16 * 128, save_at=[8 * 128])
    assert resumed["resumed_from_step"] == 8 and resumed["trained_steps"] == 8
    assert_identical(tmp_path / "straight", tmp_path / "resumed")
    assert resumed["final_loss"] == straight["final_loss"]  # the losses before the state travel with it


def test_the_final_model_saves_its_checkpoints_on_its_way(corpus, tmp_path: Path) -> None:
    """The final model's job passes every checkpoint: they are then exported with no training at all."""
    run, states = run_of(corpus), tmp_path / "states"
    final = train(run, corpus, tmp_path / "final", states, stop_at=None, save_at=[8 * 128, 16 * 128])
    assert final["trained_steps"] == STEPS and saved_steps(run.states(states)) == [8, 16]
    exported = train(run, corpus, tmp_path / "t2048", states, stop_at=16 * 128, save_at=[8 * 128, 16 * 128])
    assert exported["trained_steps"] == 0 and exported["resumed_from_step"] == 16
    train(run, corpus, tmp_path / "straight", tmp_path / "other", stop_at=16 * 128, save_at=[])
    assert_identical(tmp_path / "t2048", tmp_path / "straight")
    # a checkpoint between two saved states resumes from the nearer earlier one
    between = train(run, corpus, tmp_path / "t1536", states, stop_at=12 * 128, save_at=[8 * 128, 16 * 128])
    assert between["resumed_from_step"] == 8 and between["trained_steps"] == 4
    assert json.loads((tmp_path / "t1536/training.json").read_text())["steps"] == 12


def test_states_of_another_configuration_are_never_used(corpus, tmp_path: Path) -> None:
    """Another seed or learning rate is another run: its own states, and a changed run drops the old ones."""
    states = tmp_path / "states"
    base = run_of(corpus)
    train(base, corpus, tmp_path / "a", states, stop_at=8 * 128, save_at=[8 * 128])
    other_seed = run_of(corpus, seed=1)
    assert other_seed.identity() != base.identity()
    trained = train(other_seed, corpus, tmp_path / "b", states, stop_at=16 * 128, save_at=[])
    assert trained["resumed_from_step"] == 0  # base's state at step 8 is another run's
    assert saved_steps(base.states(states)) == [8]  # and another seed's run leaves it alone
    retuned = run_of(corpus, lr=1e-3)
    train(retuned, corpus, tmp_path / "c", states, stop_at=8 * 128, save_at=[8 * 128])
    assert not base.states(states).exists()  # the same size and seed under the old configuration: gone
    assert saved_steps(retuned.states(states)) == [8]

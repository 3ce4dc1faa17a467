"""Training one ladder run, resumable: a size's run saves its state at each checkpoint on its way.

A run is one size trained with one seed for `train.tokens` tokens. Its checkpoints are the same
run stopped after the step that reaches t tokens. The run saves its whole training state there
(weights, optimizer, learning-rate schedule, RNG, losses), so a checkpoint asked for later
resumes from the nearest earlier saved state instead of training from the start, and a checkpoint
whose state exists is exported without any training. On one machine and thread count a resumed
run is bit-identical to a straight one (tests/test_training.py checks it).

States live under `<ladder>/states/<size>/seed-<seed>/<identity>/step-<n>/`, keyed by everything the
run's weights depend on (the identity), so a changed configuration never resumes from a stale state.
Jobs of one run take a lock on its state folder: one trains while the others wait for its states.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import math
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rankscale.atomic import atomic_dir
from rankscale.canon import canonical, short_hash
from rankscale.formats import TRAIN_FORMAT
from rankscale.ladder import SizeSpec, TrainSpec, model_config, training_sequences
from rankscale.schedule import lr_factor, tokens_per_step, training_steps
from rankscale.tokens import TokenizedCorpus

log = logging.getLogger(__name__)

TRAINER_STATE = "trainer.pt"  # optimizer, schedule, RNG and losses, beside the weights of a saved state
STATE_WEIGHTS = "weights.safetensors"  # the model's state_dict as the module names it


@dataclass(frozen=True)
class Run:
    """One size trained with one seed: what its weights depend on, and where its states live."""

    size: SizeSpec
    train: TrainSpec
    vocab_size: int
    eos_id: int
    tokens_sha256: str  # the training text as token ids (the ladder's train_tokens.npz)

    @property
    def schedule(self) -> dict[str, int]:
        return {"batch_size": self.train.batch_size, "seq_len": self.train.seq_len}

    @property
    def steps(self) -> int:
        """Steps of the whole run: its learning-rate schedule spans these, whatever a job stops at."""
        return training_steps(self.train.tokens, self.schedule)

    def step_of(self, tokens: int | None) -> int:
        """The step after which the run has seen at least `tokens` tokens (None: the end of the run)."""
        return self.steps if tokens is None else min(self.steps, training_steps(tokens, self.schedule))

    def identity(self) -> str:
        """A key of everything the weights at any step depend on (never the checkpoint list)."""
        return short_hash(
            {
                "size": {k: v for k, v in asdict(self.size).items() if k != "name"},
                "train": asdict(self.train),
                "vocab_size": self.vocab_size,
                "eos_id": self.eos_id,
                "tokens": self.tokens_sha256,
                "format": TRAIN_FORMAT.version,
            },
            16,
        )

    def states(self, root: Path) -> Path:
        """`root/<size>/seed-<seed>/<identity>`: beside it only states of this size and seed under an older
        configuration, which a new identity replaces (other seeds' runs keep theirs)."""
        return root / self.size.name / f"seed-{self.train.seed}" / self.identity()


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the run's lock: another job of the same run waits, then finds the states this one saved.

    A shared file system without locks (some NFS mounts) only loses the waiting: two jobs of one run
    may then both train from the last saved state, to the same weights.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "a") as handle:  # opened, never written: its time stays that of the first job
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError as exc:
            log.warning("%s: no file lock on this file system (%s): jobs of this run will not wait", folder, exc)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(handle, fcntl.LOCK_UN)


def saved_steps(folder: Path) -> list[int]:
    """Steps with a complete saved state (a state folder appears by an atomic rename, so it is complete)."""
    return sorted(int(p.name[5:]) for p in folder.glob("step-*") if p.name[5:].isdigit() and p.is_dir())


def _forget_other_identities(run_folder: Path, keep: str) -> None:
    """States of the same size and seed under another identity belong to a configuration no longer run."""
    for other in run_folder.parent.iterdir() if run_folder.parent.exists() else []:
        if other.is_dir() and other.name != keep and not other.name.startswith("."):
            shutil.rmtree(other, ignore_errors=True)


class Trainer:
    """The model, optimizer and schedule of one run, at some step."""

    def __init__(self, run: Run, corpus: TokenizedCorpus) -> None:
        from transformers import GPTNeoXForCausalLM

        self.run = run
        torch.manual_seed(run.train.seed)
        rng = np.random.default_rng(run.train.seed)
        self.seqs = training_sequences(corpus, run.train.seq_len, run.eos_id)
        self.model = GPTNeoXForCausalLM(model_config(run.size, run.vocab_size, run.train.seq_len, run.eos_id))
        self.model.train()
        decay = [p for n, p in self.model.named_parameters() if p.ndim >= 2]
        no_decay = [p for n, p in self.model.named_parameters() if p.ndim < 2]
        self.opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": run.train.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=run.train.lr,
            betas=(0.9, 0.95),
        )
        steps, warmup = run.steps, run.train.warmup_steps
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda step: lr_factor(step, steps, warmup))
        batch = run.train.batch_size
        self.order = np.concatenate(
            [rng.permutation(len(self.seqs)) for _ in range(math.ceil(steps * batch / len(self.seqs)) + 1)]
        )
        self.step = 0
        self.losses: list[float] = []

    def load(self, state: Path) -> None:
        """Continue from a saved state: weights, optimizer moments, schedule position, RNG, losses."""
        from safetensors.torch import load_file

        self.model.load_state_dict(load_file(state / STATE_WEIGHTS))
        saved = torch.load(state / TRAINER_STATE, weights_only=True)
        self.opt.load_state_dict(saved["optimizer"])
        self.sched.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["torch_rng"])
        self.step, self.losses = int(saved["step"]), [float(v) for v in saved["losses"]]

    def save(self, state: Path) -> None:
        """The whole training state at this step, written atomically (a half-written state never looks saved)."""
        from safetensors.torch import save_file

        with atomic_dir(state) as tmp:
            # the module's own parameter names (save_pretrained renames some for the hub's conventions)
            save_file({k: v.contiguous() for k, v in self.model.state_dict().items()}, str(tmp / STATE_WEIGHTS))
            torch.save(
                {
                    "optimizer": self.opt.state_dict(),
                    "scheduler": self.sched.state_dict(),
                    "torch_rng": torch.get_rng_state(),
                    "step": self.step,
                    "losses": self.losses,
                },
                tmp / TRAINER_STATE,
            )

    def train_to(self, stop: int, save: Sequence[int], states: Path) -> None:
        """Train up to step `stop`, saving the state after each step of `save` passed on the way."""
        started = last = time.perf_counter()
        first, per_step, batch = self.step, tokens_per_step(self.run.schedule), self.run.train.batch_size
        while self.step < stop:
            idx = self.order[self.step * batch : (self.step + 1) * batch]
            inputs = torch.from_numpy(self.seqs[idx].astype(np.int64))
            loss = self.model(input_ids=inputs, labels=inputs).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.opt.step()
            self.sched.step()
            self.opt.zero_grad(set_to_none=True)
            self.losses.append(loss.item())
            self.step += 1
            if self.step in save:
                self.save(states / f"step-{self.step}")
            now = time.perf_counter()
            if now - last >= 10 or self.step == stop:
                rate = (self.step - first) * per_step / max(now - started, 1e-9)
                log.info("%s step %d/%d loss %.3f (%.0f tokens/s)", self.run.size.name, self.step, self.run.steps,
                         np.mean(self.losses[-20:]), rate)  # fmt: skip
                last = now


def train_model(
    run: Run, corpus: TokenizedCorpus, out_dir: Path, state_root: Path, stop_at: int | None, save_at: Sequence[int]
) -> dict[str, Any]:
    """Train (or resume, or export) one model of a run into `out_dir`; return its training summary.

    `stop_at`: a checkpoint, the run stopped after the step that reaches `stop_at` tokens (None: the
    final model). `save_at`: the run's checkpoints (tokens), whose states are saved on the way.
    """
    started = time.perf_counter()
    stop = run.step_of(stop_at)
    save = sorted({run.step_of(t) for t in save_at if run.step_of(t) < run.steps} | ({stop} if stop_at else set()))
    states = run.states(state_root)
    with locked(states):
        _forget_other_identities(states, states.name)
        earlier = [s for s in saved_steps(states) if s <= stop]
        trainer = Trainer(run, corpus)
        if earlier:
            trainer.load(states / f"step-{earlier[-1]}")
            log.info("%s: resumed from the state saved at step %d of %d", run.size.name, trainer.step, run.steps)
        else:
            log.info("%s: no earlier saved state: training from step 0", run.size.name)
        resumed_from = trainer.step
        trainer.train_to(stop, [s for s in save if s > trainer.step], states)
    trainer.model.eval()
    trainer.model.save_pretrained(str(out_dir), safe_serialization=True)
    per_step = tokens_per_step(run.schedule)
    summary = {
        "size": asdict(run.size),
        "train": asdict(run.train),
        "steps": stop,
        "schedule_steps": run.steps,
        "tokens_seen": stop * per_step,
        "epochs": stop * run.train.batch_size / len(trainer.seqs),
        "final_loss": float(np.mean(trainer.losses[-20:])),
        "resumed_from_step": resumed_from,
        "trained_steps": stop - resumed_from,
        "run_identity": run.identity(),
        "format": TRAIN_FORMAT.version,
        "wall_time_s": time.perf_counter() - started,
    }
    (out_dir / "training.json").write_text(json.dumps(canonical(summary), indent=2) + "\n")
    return summary

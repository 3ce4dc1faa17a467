"""How far two computation paths of the same logits may differ: tolerances from float32 arithmetic.

Tests compare the workflow's extraction with a plain forward pass, one batch size, thread count or
head chunking with another, a saved model with the model it came from. Each path rounds in its own
order (BLAS and ATen pick their kernels per processor, per thread count, per matrix shape), so their
logits agree only to rounding error, and a fixed tolerance tuned on one processor fails on another
(3.3e-5 on an Intel Xeon against 2e-5 allowed). The bounds here scale with the numbers
that set the rounding error instead.

Derivation. The random-rounding model (Higham & Mary, SIAM J. Sci. Comput. 41(5), 2019; Connolly,
Higham & Mary, SIAM J. Sci. Comput. 43(3), 2021): every float operation makes an independent, mean-zero
relative error of at most u (float32: u = 2^-24). A length-d dot product z = w.h, summed in any order
or blocking, adds up d - 1 partial sums each made with one such error; every partial sum is at most
S = sum_i |w_i h_i| in size, so the error's standard deviation is at most u * sqrt(d) * S. A logit is
that dot product between a head row w_v and the hidden state h the head receives; S is the largest
over the real vocabulary (bias included), computed from the reference's own h and head. The backbone's
rounding reaches the logits through h: it is not bounded separately (no useful a-priori bound exists
through a deep network); the model is normalised before the head, so h's relative error is taken to
be of the same order. The deliberate divergences made to test this (other thread counts, other CPU kernels
through ATEN_CPU_CAPABILITY and MKL_CBWR) check that: SmolLM2-135M's logits moved by at most 6.2 u S,
about a quarter of u * sqrt(d) * S (sqrt(d) = 24), all 30 layers included.

    per path, logit:     e_z  = u * sqrt(d) * S
    per path, log-prob:  e_lp = 2 e_z + e_lse            log_softmax is 2-Lipschitz in the max norm
                         e_lse = u * (|lse| + (z_max - z_min) + sqrt(V) + log V + |lp| + 2)
                         (m + log sum exp(z - m): the exponent's rounding u|z - m| weighted by the
                         probabilities, the V-term sum's u sqrt(V), the log's u log V, the final
                         additions' u |lse| and u |lp|, exp's own u or two)
    between two paths:   logit_tol   = 2 * SIGMAS * e_z
                         logprob_tol = 2 * SIGMAS * e_lp  (one path against float64: half)

Ranks. Between two paths a competitor v can change sides of the target only if their reference gap
|z_v - z_t| is within 2 * logit_tol (each of the two logits moves by at most logit_tol). Such a
competitor is a near tie; a rank may then move by at most the number of near ties, anywhere else it
is equal. Rank differences are accidents of single tokens, so they must also be few: at most
MAX_NEAR_TIE_FRACTION of the tokens, rounded up. Dense logits make the most: the throughput benchmark
measured 13 of 3,048 (0.43%) on random token ids; a random 16-wide model over 49,152 tokens
(tests/test_pretrained.py's tiny-bos) 4 of 773 (0.52%) with the reference on other CPU kernels; 2%
leaves four times that. Exact ties (twin head rows) count as near ties.

Calibration fields (rankscale.ranking.TokenScores), from the same e_z, near ties and e_lp:
    top-1 log-prob:  logprob_tol                          (a log-softmax, of the largest logit: |lp| no larger)
    entropy:         logprob_tol + logit_tol * (z_max - z_min)   dH/dz_v = -p_v (z_v - sum p z): at most the spread
    mass above:      logit_tol * 2 + near * p_t * exp(2 logit_tol) + SIGMAS * paths * u * (sqrt(V) + 2)
                     (each probability moves by at most 2 logit_tol relatively, and M <= 1; a near tie can
                     change sides, carrying about the target's own probability; the V-term sum's rounding)

Knobs that make the paths differ on purpose (tests read them; unset, nothing changes):
  RANKSCALE_TEST_EXTRACTION_THREADS  torch threads of the extraction (workflow jobs and in-process calls)
  RANKSCALE_TEST_REFERENCE_THREADS   torch threads of the tests' reference forward passes
  RANKSCALE_TEST_WORKFLOW_ENV        "NAME=value ..." set (or, with an empty value, removed) in the
                                     environment of workflow runs only, e.g. "ATEN_CPU_CAPABILITY=" with
                                     pytest itself under ATEN_CPU_CAPABILITY=default: other CPU kernels
  RANKSCALE_TEST_TOLERANCE_LOG       a file each comparison appends one JSON line to (its largest
                                     deviation against its bound), for reports
"""

from __future__ import annotations

import json
import math
import os
import shlex
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

# each path within two standard deviations of its rounding error, themselves bounded pessimistically (S for
# every partial sum): measured divergences reach 6% of logit_tol and 3% of logprob_tol (SmolLM2-135M)
SIGMAS = 2.0
MAX_NEAR_TIE_FRACTION = 0.02  # rank differences allowed, as a fraction of tokens (rounded up)
ROW_CHUNK = 256  # rows of |h| @ |W|^T at once (256 x 49,152 float32: 48 MiB)


def unit_roundoff(dtype: torch.dtype) -> float:
    """Half the distance from 1 to the next number of `dtype`: 2^-24 for float32, 2^-8 for bfloat16."""
    return float(torch.finfo(dtype).eps) / 2


@dataclass(frozen=True)
class PathTolerance:
    """Per scored token, from the reference path: how far another path's logits and log-prob may be,
    and how many competitors sit close enough to the target to trade places with it."""

    logit: np.ndarray  # bound on |z_v(path a) - z_v(path b)|, for every v of the token's row
    logprob: np.ndarray  # bound on |lp(path a) - lp(path b)|
    near: np.ndarray  # competitors v != t with |z_v - z_t| <= 2 * logit in the reference

    @staticmethod
    def concat(parts: list[PathTolerance]) -> PathTolerance:
        """Tokens of several reference passes, in order."""
        return PathTolerance(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("logit", "logprob", "near")))


def head_scale(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, vocab: int) -> np.ndarray:
    """S per row: max over the real vocabulary of sum_i |w_vi h_i| (+ |b_v|), the size every partial
    sum of a logit's dot product stays under. Float32 is exact enough: all terms are positive."""
    h = hidden.detach().reshape(-1, hidden.shape[-1]).float().abs()
    w = weight.detach()[:vocab].float().abs()
    b = None if bias is None else bias.detach()[:vocab].float().abs()
    out = []
    for c in range(0, h.shape[0], ROW_CHUNK):
        sums = h[c : c + ROW_CHUNK].to(w.device) @ w.T
        out.append((sums if b is None else sums + b).max(dim=1).values.double().cpu())
    return torch.cat(out).numpy() if out else np.zeros(0)


def lse_error(logits: torch.Tensor, targets: torch.Tensor) -> np.ndarray:
    """e_lse per row: one path's rounding in a float32 log-softmax of these logits (the module docstring)."""
    z = logits.detach().double()
    lse = torch.logsumexp(z, dim=1)
    lp = z.gather(1, targets.long()[:, None])[:, 0] - lse
    vocab = z.shape[1]
    spread = z.max(dim=1).values - z.min(dim=1).values
    terms = lse.abs() + spread + math.sqrt(vocab) + math.log(vocab) + lp.abs() + 2
    return (unit_roundoff(torch.float32) * terms).numpy()


def path_tolerance(
    logits: torch.Tensor,
    targets: torch.Tensor,
    hidden: torch.Tensor,
    head: torch.nn.Module,
    dtype: torch.dtype = torch.float32,
    output_dtype: torch.dtype | None = None,
    paths: int = 2,
) -> PathTolerance:
    """Tolerances for rows of reference `logits` [N, V] (real vocabulary only) with `targets` [N], from the
    `hidden` states [N, d] the reference fed its output `head` (a module with .weight and .bias).

    `dtype`: what the logits' reductions round in (u in e_z). `output_dtype`: a dtype the logits are then
    rounded to (a bfloat16 head accumulating in float32), adding its u * |z|max to e_z. `paths`: 2 for
    two rounded paths, 1 for one path against an exact one.
    """
    if logits.shape[0] > ROW_CHUNK:  # a few float64 copies of the rows at a time
        return PathTolerance.concat([
            path_tolerance(logits[c : c + ROW_CHUNK], targets[c : c + ROW_CHUNK], hidden[c : c + ROW_CHUNK], head,
                           dtype, output_dtype, paths)
            for c in range(0, logits.shape[0], ROW_CHUNK)
        ])  # fmt: skip
    logits = logits.detach().float()
    vocab, d = logits.shape[1], hidden.shape[-1]
    e_z = unit_roundoff(dtype) * math.sqrt(d) * head_scale(hidden, head.weight, getattr(head, "bias", None), vocab)
    if output_dtype is not None:
        e_z = e_z + unit_roundoff(output_dtype) * logits.abs().max(dim=1).values.double().numpy()
    e_lp = 2 * e_z + lse_error(logits, targets)
    logit_tol, logprob_tol = paths * SIGMAS * e_z, paths * SIGMAS * e_lp
    z = logits.double()
    gap = (z - z.gather(1, targets.long()[:, None])).abs()
    near = (gap <= 2 * torch.from_numpy(logit_tol)[:, None]).sum(dim=1) - 1  # less the target itself
    return PathTolerance(logit_tol, logprob_tol, near.numpy())


def logprob_tolerance(logits: torch.Tensor, targets: torch.Tensor, paths: int = 2) -> np.ndarray:
    """Bound for two log-softmax implementations of the same float32 `logits` (no logit error at all)."""
    return paths * SIGMAS * lse_error(logits, targets)


@contextmanager
def head_inputs(model: Any) -> Iterator[list[torch.Tensor]]:
    """Records what `model`'s output head receives during the block: the hidden states behind every logit."""
    seen: list[torch.Tensor] = []
    handle = model.get_output_embeddings().register_forward_pre_hook(lambda _m, args: seen.append(args[0].detach()))
    try:
        yield seen
    finally:
        handle.remove()


def _log(kind: str, what: str, record: Mapping[str, Any]) -> None:
    path = os.environ.get("RANKSCALE_TEST_TOLERANCE_LOG")
    if path:
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        with open(path, "a") as out:
            out.write(json.dumps({"test": test, "kind": kind, "what": what, **record}) + "\n")


def assert_logprobs_close(
    actual: np.ndarray, expected: np.ndarray, tol: PathTolerance | np.ndarray, what: str = ""
) -> None:
    """Every |actual - expected| within its token's bound."""
    bound = tol.logprob if isinstance(tol, PathTolerance) else np.asarray(tol)
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape == bound.shape, (actual.shape, expected.shape, bound.shape)
    dev = np.abs(actual - expected)
    ratio = dev / bound
    worst = int(np.argmax(ratio)) if ratio.size else 0
    _log("logprob", what, {"n": int(dev.size), "max_dev": float(dev.max(initial=0)),
                           "max_dev_over_bound": float(ratio.max(initial=0)),
                           "bound_median": float(np.median(bound)) if bound.size else 0.0})  # fmt: skip
    assert np.isfinite(actual).all() and (dev <= bound).all(), (
        f"{what}: {(dev > bound).sum()} of {dev.size} log-probs outside their float32 bound; worst [{worst}]: "
        f"{actual[worst]!r} vs {expected[worst]!r}, |diff| {dev[worst]:.3g} > bound {bound[worst]:.3g}"
    )


def assert_ranks_close(actual: np.ndarray, expected: np.ndarray, tol: PathTolerance, what: str = "") -> int:
    """Ranks equal except at near ties: each difference at most the token's near-tie count, and at most
    MAX_NEAR_TIE_FRACTION of the tokens (rounded up) differ at all. Returns how many differ."""
    actual, expected = np.asarray(actual, dtype=np.int64), np.asarray(expected, dtype=np.int64)
    assert actual.shape == expected.shape == tol.near.shape, (actual.shape, expected.shape, tol.near.shape)
    diff = np.abs(actual - expected)
    moved = np.flatnonzero(diff)
    allowed = math.ceil(MAX_NEAR_TIE_FRACTION * diff.size)
    _log("rank", what, {"n": int(diff.size), "differing": int(moved.size), "allowed": allowed,
                        "max_diff": int(diff.max(initial=0)), "near_tie_tokens": int((tol.near > 0).sum())})  # fmt: skip
    beyond = moved[diff[moved] > tol.near[moved]]
    assert beyond.size == 0, (
        f"{what}: {beyond.size} ranks moved by more than their near ties, e.g. [{beyond[0]}]: "
        f"{actual[beyond[0]]} vs {expected[beyond[0]]} with {tol.near[beyond[0]]} competitors within "
        f"{2 * tol.logit[beyond[0]]:.3g} of the target"
    )
    assert moved.size <= allowed, f"{what}: {moved.size} of {diff.size} ranks differ (near ties), more than {allowed}"
    return int(moved.size)


@dataclass(frozen=True)
class CalibrationTolerance:
    """Per scored token: how far another path's calibration fields may be (the module docstring)."""

    mass_above: np.ndarray
    top1_logprob: np.ndarray
    entropy: np.ndarray


def calibration_tolerance(logits: torch.Tensor, targets: torch.Tensor, tol: PathTolerance | None = None,
                          paths: int = 2) -> CalibrationTolerance:  # fmt: skip
    """Bounds for the calibration fields of rows of reference `logits` [N, V] (real vocabulary only); `tol`
    from `path_tolerance` when the logits themselves differ between the paths, None when they do not."""
    z = logits.detach().double()
    vocab = z.shape[1]
    logprob_tol = tol.logprob if tol is not None else logprob_tolerance(logits, targets, paths)
    logit_tol = tol.logit if tol is not None else np.zeros(z.shape[0])
    near = tol.near if tol is not None else np.zeros(z.shape[0])
    spread = (z.max(dim=1).values - z.min(dim=1).values).numpy()
    p_t = torch.softmax(z, dim=1).gather(1, targets.long()[:, None])[:, 0].numpy()
    rounding = SIGMAS * paths * unit_roundoff(torch.float32) * (math.sqrt(vocab) + 2)
    mass = 2 * logit_tol + near * p_t * np.exp(2 * logit_tol) + rounding
    return CalibrationTolerance(mass, logprob_tol, logprob_tol + logit_tol * spread)


def brute_force_calibration(logits: torch.Tensor, targets: torch.Tensor, ties: str) -> dict[str, np.ndarray]:
    """The calibration fields from a float64 softmax of every row (real vocabulary only), by definition."""
    z = logits.detach().double()
    logp = torch.log_softmax(z, dim=1)
    p = logp.exp()
    zt = z.gather(1, targets.long()[:, None])
    competitor = torch.ones_like(z, dtype=torch.bool).scatter_(1, targets.long()[:, None], False)
    above = competitor & ((z >= zt) if ties == "ge" else (z > zt))
    return {
        "mass_above": (p * above).sum(dim=1).numpy(),
        "top1_logprob": logp.max(dim=1).values.numpy(),
        "entropy": -(p * logp).sum(dim=1).numpy(),
    }


def assert_calibration_close(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
                             tol: CalibrationTolerance, what: str = "") -> None:  # fmt: skip
    """Every field of every token within its bound."""
    for field in ("mass_above", "top1_logprob", "entropy"):
        a, e = np.asarray(actual[field], dtype=np.float64), np.asarray(expected[field], dtype=np.float64)
        bound = getattr(tol, field)
        dev = np.abs(a - e)
        worst = int(np.argmax(dev / bound)) if dev.size else 0
        _log(field, what, {"n": int(dev.size), "max_dev": float(dev.max(initial=0)),
                           "max_dev_over_bound": float((dev / bound).max(initial=0))})  # fmt: skip
        assert a.shape == e.shape and np.isfinite(a).all() and (dev <= bound).all(), (
            f"{what}: {(dev > bound).sum()} of {dev.size} {field} values outside their float32 bound; worst "
            f"[{worst}]: {a[worst]!r} vs {e[worst]!r}, |diff| {dev[worst]:.3g} > bound {bound[worst]:.3g}"
        )


def _threads(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value else None


def extraction_threads() -> int | None:
    """RANKSCALE_TEST_EXTRACTION_THREADS: torch threads the extraction must use, or None to leave it be."""
    return _threads("RANKSCALE_TEST_EXTRACTION_THREADS")


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """torch.set_num_threads(threads) during the block (None: unchanged)."""
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def reference_threads() -> AbstractContextManager[None]:
    """The tests' reference passes run under RANKSCALE_TEST_REFERENCE_THREADS torch threads, if set."""
    return torch_threads(_threads("RANKSCALE_TEST_REFERENCE_THREADS"))


def workflow_env(env: dict[str, str]) -> dict[str, str]:
    """`env` with RANKSCALE_TEST_WORKFLOW_ENV's "NAME=value" words applied (an empty value removes NAME)."""
    out = dict(env)
    for word in shlex.split(os.environ.get("RANKSCALE_TEST_WORKFLOW_ENV", "")):
        name, _, value = word.partition("=")
        if value:
            out[name] = value
        else:
            out.pop(name, None)
    return out

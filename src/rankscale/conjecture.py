"""Statistics of the rank distribution: error entropy, the CE decomposition, and the lognormal's laws.

- Error entropy (arXiv 2510.04067): EE = -sum_r P(R = r) log P(R = r) of the empirical rank
  distribution; Miller-Madow corrects its plug-in bias by + (m - 1) / (2n), m non-empty ranks.
  Here they are the plug-in values of one histogram; a summary reports bias-corrected estimators instead
  (`rankscale.decomposition_jackknife`: the error entropy's jackknife over documents, confidence's Chao2 with the
  rank errors a sample missed; the plug-in's bias is 1-6 of its SDs).
- The companion paper's decomposition of cross-entropy, exact on the stored (rank, log-prob)
  pairs: with e = R - 1, p_e the share of tokens of rank error e, Q_e = exp(mean log p(t) over
  them), C = sum_e Q_e and q_e = Q_e / C,
      CE = H(p) + KL(p || q) - log C   (error entropy + self-alignment + confidence).
- What the fitted discrete lognormal implies (`rankscale.lognormal.implied`, `appendix_b`).
All of it is computed from a weighted rank histogram, so a bootstrap replicate is the same
computation on the replicate's histogram.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import sparse
from scipy.special import logsumexp

from rankscale.lognormal import DegenerateRanks, appendix_b, entropy, fit_lognormal, implied, log_pmf_and_score


def rank_sums(rank: np.ndarray, logprob: np.ndarray, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per rank r = 0..|V|: how many tokens, and their summed log-prob (float64)."""
    r = rank.astype(np.int64)
    return (
        np.bincount(r, minlength=vocab_size + 1).astype(np.float64),
        np.bincount(r, weights=logprob.astype(np.float64), minlength=vocab_size + 1),
    )


def error_entropy(counts: np.ndarray) -> tuple[float, float]:
    """(plug-in EE, Miller-Madow corrected EE) of a (possibly weighted) rank histogram."""
    n = float(counts.sum())
    nonzero = counts[counts > 0]
    ee = entropy(nonzero / n)
    return ee, ee + (nonzero.size - 1) / (2 * n)


def decomposition(counts: np.ndarray, logprob_sums: np.ndarray) -> tuple[float, float, float]:
    """(error entropy, self-alignment KL(p || q), confidence -log C); they sum to CE."""
    seen = counts > 0
    n = float(counts.sum())
    p = counts[seen] / n
    log_q_raw = logprob_sums[seen] / counts[seen]  # log Q_e: mean log-prob of the tokens of rank error e
    log_c = float(np.logaddexp.reduce(log_q_raw))
    log_q = log_q_raw - log_c
    return float(-(p @ np.log(p))), float(p @ (np.log(p) - log_q)), -log_c


def lognormal_rbp_name(k: int) -> str:
    """The name of -log RBP_k implied by the fitted lognormal: a conjecture.csv column and replicate key."""
    return f"neg_log_rbp{k}_lognormal"


@dataclass(frozen=True)
class Distribution:
    """Everything conjecture.csv reports for one rank histogram (`distribution_statistics`)."""

    ee: float  # error entropy, plug-in
    ee_mm: float  # Miller-Madow corrected
    self_alignment: float  # KL(p || q)
    confidence: float  # -log C
    ranks_seen: int
    mu: float  # the fitted discrete lognormal (NaN when it cannot be fitted or ran to a bound: `note` says why)
    sigma: float
    ee_lognormal: float  # its entropy: the CE a calibrated model with it would have
    neg_log_p1_lognormal: float  # its -log P(R = 1)
    neg_log_rbp_lognormal: dict[int, float]  # its -log P(R <= k), per k of analysis.law_k
    ce_appendix_b: float  # the paper's closed-form approximations (Appendix B, eq. 21)
    neg_log_p1_appendix_b: float
    note: str = ""

    def values(self) -> dict[str, float]:
        """The statistics that have bootstrap replicates, by the name of their column and replicate key."""
        return {
            "ee": self.ee,
            "ee_mm": self.ee_mm,
            "self_alignment": self.self_alignment,
            "confidence": self.confidence,
            "mu": self.mu,
            "sigma": self.sigma,
            "ee_lognormal": self.ee_lognormal,
            "neg_log_p1_lognormal": self.neg_log_p1_lognormal,
            **{lognormal_rbp_name(k): v for k, v in self.neg_log_rbp_lognormal.items()},
            "ce_appendix_b": self.ce_appendix_b,
            "neg_log_p1_appendix_b": self.neg_log_p1_appendix_b,
        }

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "neg_log_rbp_lognormal": [[k, v] for k, v in self.neg_log_rbp_lognormal.items()]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Distribution:
        return cls(**{**data, "neg_log_rbp_lognormal": {int(k): float(v) for k, v in data["neg_log_rbp_lognormal"]}})


def distribution_statistics(
    counts: np.ndarray,
    logprob_sums: np.ndarray,
    ks: Sequence[int],
    truncate: bool,
    start: tuple[float, float] | None = None,
) -> Distribution:
    """The error entropy, CE's decomposition and the fitted lognormal's implications for one rank
    histogram (counts[r], r = 0..|V|)."""
    vocab_size = len(counts) - 1
    ee, ee_mm = error_entropy(counts)
    _, self_alignment, confidence = decomposition(counts, logprob_sums)
    measured = {"ee": ee, "ee_mm": ee_mm, "self_alignment": self_alignment, "confidence": confidence,
                "ranks_seen": int((counts > 0).sum())}  # fmt: skip
    nan = math.nan
    not_fitted: dict[str, Any] = dict(mu=nan, sigma=nan, ee_lognormal=nan, neg_log_p1_lognormal=nan,
                      neg_log_rbp_lognormal=dict.fromkeys(ks, nan), ce_appendix_b=nan, neg_log_p1_appendix_b=nan)  # fmt: skip
    try:
        fit = fit_lognormal(counts, truncate=truncate, start=start)
    except DegenerateRanks as exc:
        return Distribution(**measured, **not_fitted, note=str(exc))
    if fit.at_bound:  # where the search stopped is no estimate: neither it nor anything derived from it is reported
        return Distribution(**measured, **not_fitted, note=fit.bound_note())
    derived = implied(fit.mu, fit.sigma, vocab_size, list(ks), truncate)
    neg_log_p1_b, ce_b = appendix_b(fit.mu, fit.sigma)
    return Distribution(
        **measured,
        mu=fit.mu,
        sigma=fit.sigma,
        ee_lognormal=derived.entropy,
        neg_log_p1_lognormal=derived.neg_log_p1,
        neg_log_rbp_lognormal={k: derived.neg_log_rbp.get(k, math.nan) for k in ks},
        ce_appendix_b=ce_b,
        neg_log_p1_appendix_b=neg_log_p1_b,
    )


def markov_run_rate(rbp: np.ndarray, prev_hit: np.ndarray, both_hit: np.ndarray, n: int) -> np.ndarray:
    """Rate of N-runs all inside the top-k under a first-order Markov chain of hits:
    pi * P(hit | previous hit)^(N - 1), pi = RBP_k, P(hit | hit) from consecutive scored pairs."""
    with np.errstate(invalid="ignore", divide="ignore"):
        stay = np.asarray(both_hit, dtype=np.float64) / np.asarray(prev_hit, dtype=np.float64)
    return np.asarray(rbp, dtype=np.float64) * stay ** (n - 1)


def block_statistics(counts: np.ndarray, logprob_sums: np.ndarray) -> dict[str, np.ndarray]:
    """ee, ee_mm, self_alignment and confidence of each column of weighted histograms [|V| + 1, b]."""
    n = counts.sum(axis=0)
    seen = counts > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        p = counts / n
        log_p = np.where(seen, np.log(np.where(seen, p, 1.0)), 0.0)
        log_q_raw = np.where(seen, logprob_sums / np.where(seen, counts, 1.0), -np.inf)
    ee = -(p * log_p).sum(axis=0)
    log_c = logsumexp(log_q_raw, axis=0)
    kl = (p * np.where(seen, log_p - (log_q_raw - log_c), 0.0)).sum(axis=0)
    return {"ee": ee, "ee_mm": ee + (seen.sum(axis=0) - 1) / (2 * n), "self_alignment": kl, "confidence": -log_c}


@dataclass(frozen=True)
class OneStep:
    """The lognormal refitted on a replicate by one Newton step from the full-data fit.

    theta_b = theta - H^-1 grad_b(theta), with H the full-data Hessian of the mean negative
    log-likelihood and grad_b the replicate's gradient at theta: the linearised bootstrap of a
    maximum-likelihood estimate (first-order equal to refitting each replicate, at the cost of a
    matrix product). Quantities the fit implies follow by the delta method.
    """

    theta: np.ndarray  # (mu, log sigma) of the full-data fit
    score: np.ndarray  # d log P(R = r) / d theta at theta, [|V| + 1, 2] (row 0: no rank 0)
    inverse_hessian: np.ndarray  # [2, 2]
    values: dict[str, float]  # implied quantities at theta
    jacobian: dict[str, np.ndarray]  # their gradients in theta

    @classmethod
    def at(cls, counts: np.ndarray, mu: float, sigma: float, ks: Sequence[int], truncate: bool) -> OneStep:
        vocab_size = len(counts) - 1
        theta = np.array([mu, math.log(sigma)])
        score = np.zeros((vocab_size + 1, 2))
        score[1:] = log_pmf_and_score(np.arange(1, vocab_size + 1), mu, sigma, vocab_size, truncate)[1]
        seen = np.nonzero(counts)[0]
        weights = counts[seen] / counts.sum()

        def gradient(t: np.ndarray) -> np.ndarray:
            return -(weights @ log_pmf_and_score(seen, t[0], math.exp(t[1]), vocab_size, truncate)[1])

        def implied_values(t: np.ndarray) -> dict[str, float]:
            got = implied(t[0], math.exp(t[1]), vocab_size, list(ks), truncate)
            return {
                "ee_lognormal": got.entropy,
                "neg_log_p1_lognormal": got.neg_log_p1,
                **{lognormal_rbp_name(k): v for k, v in got.neg_log_rbp.items()},
            }

        step = 1e-4
        hessian = np.empty((2, 2))
        jacobian_columns = []
        for i, e in enumerate(np.eye(2) * step):
            hessian[:, i] = (gradient(theta + e) - gradient(theta - e)) / (2 * step)
            up, down = implied_values(theta + e), implied_values(theta - e)
            jacobian_columns.append({name: (up[name] - down[name]) / (2 * step) for name in up})
        hessian = (hessian + hessian.T) / 2
        jacobian = {name: np.array([col[name] for col in jacobian_columns]) for name in jacobian_columns[0]}
        return cls(theta, score, np.linalg.inv(hessian), implied_values(theta), jacobian)

    def replicates(self, counts: np.ndarray) -> dict[str, np.ndarray]:
        """mu, sigma and the implied quantities for each column of replicate histograms [|V| + 1, b]."""
        gradient = -(counts.T @ self.score) / counts.sum(axis=0)[:, None]  # [b, 2]
        theta = self.theta - gradient @ self.inverse_hessian.T
        shift = theta - self.theta
        out = {"mu": theta[:, 0], "sigma": np.exp(theta[:, 1])}
        out.update({name: self.values[name] + shift @ self.jacobian[name] for name in self.values})
        closed = np.array([closed_form(m, s) for m, s in zip(out["mu"], out["sigma"], strict=True)]).reshape(-1, 2)
        out["neg_log_p1_appendix_b"], out["ce_appendix_b"] = closed[:, 0], closed[:, 1]
        return out


def closed_form(mu: float, sigma: float) -> tuple[float, float]:
    """`appendix_b` of one replicate's (mu, sigma), NaN where a replicate's one Newton step went where it has no
    value (a normaliser that underflows): a jackknife leaving out a third of the tokens can step that far."""
    try:
        return appendix_b(mu, sigma)
    except (ValueError, OverflowError, ZeroDivisionError):
        return math.nan, math.nan


def distribution_replicates(
    rank_by_row: sparse.csr_matrix,
    logprob_by_row: sparse.csr_matrix,
    weight_blocks: Iterable[np.ndarray],
    point: Distribution,
    ks: Sequence[int],
    truncate: bool,
) -> dict[str, np.ndarray]:
    """Replicates of every `distribution_statistics` value: each block of weights [b, documents]
    resamples the per-document rank histograms (`rank_by_row`: counts [|V| + 1, documents])."""
    counts_all = np.asarray(rank_by_row.sum(axis=1)).ravel()
    one_step = None if point.note else OneStep.at(counts_all, point.mu, point.sigma, ks, truncate)
    parts: list[dict[str, np.ndarray]] = []
    for weights in weight_blocks:
        counts = np.asarray(rank_by_row @ weights.T)
        out = block_statistics(counts, np.asarray(logprob_by_row @ weights.T))
        if one_step is not None:
            out.update(one_step.replicates(counts))
        parts.append(out)
    names = list(point.values())
    if not parts:
        return {name: np.zeros(0) for name in names}
    return {
        name: np.concatenate([p[name] for p in parts])
        if name in parts[0]
        else np.full(sum(len(p["ee"]) for p in parts), np.nan)
        for name in names
    }

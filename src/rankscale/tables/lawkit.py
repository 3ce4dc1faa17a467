"""What every table of laws shares: the groups a law is fitted per, a fit or the note why not, a law refitted on
every replicate (its band, a new model's value), and two laws' exponents compared.

Every table module that fits laws, and the figures that draw their bands, import these from here: the tables
of the laws themselves (rankscale.tables.laws: fits, contrasts, forms compared) are one topic, not the toolkit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rankscale.bootstrap import interval
from rankscale.laws import FitForm, FittedLaw, Points
from rankscale.laws.agreement import interval_p_value
from rankscale.laws.few_documents import Documents
from rankscale.tables.base import Replicates
from rankscale.tables.declaration import LAW_SETTINGS  # noqa: F401  (re-exported)
from rankscale.tables.noise import LawNoise, Noise, law_noise, size_correlation_of
from rankscale.tables.selection import size_note

GROUP = ["family", "dataset", "metric", "k"]  # one law per group of the metrics table
# metrics.csv's `ci_method` of a statistic whose interval reads its bootstrap replicates under the bias rule
# (`rankscale.bca.stable_choice`): BCa, its jackknife t fallback, BC without a jackknife; and the replicates' SD
# with t of an estimator that is no smooth statistic (`rankscale.bca.unsmooth_interval`)
REPLICATE_METHODS = ("bca", "bc", "jackknife_t", "bootstrap_se_t")


def biased_models(group: pd.DataFrame) -> str:
    """Why a law of these models' statistic gets no interval ('' where it may): a law's interval refits its
    models' bootstrap replicates, so it holds only where each model's own replicates may carry an interval of the
    statistic. Where metrics.csv gives some model's statistic none (the rule found it biased under resampling,
    or no replicate was finite), the law's percentile interval would rest on the same biased replicates: say which
    models, and the first one's reason. Ratios (cr2_t) read no replicate for their own interval: never gated."""
    if "ci_method" not in group or "ci_low" not in group:
        return ""
    resampled = group[group["ci_method"].isin(REPLICATE_METHODS)]
    ends = resampled[["ci_low", "ci_high"]].to_numpy(dtype=np.float64)
    missing = resampled[~np.isfinite(ends).all(axis=1)]
    if missing.empty:
        return ""
    why = str(missing["ci_note"].fillna("").iloc[0]) if "ci_note" in missing else ""
    names = ", ".join(str(m) for m in missing["model"])
    return (f"no interval: {len(missing)} of {len(group)} models' statistic has none of its own in metrics.csv "
            f"({names}{': ' + why if why else ''}), and the law's refits read the same replicates")  # fmt: skip


def fit_or_note(form: FitForm, points: Points, y: np.ndarray) -> tuple[FittedLaw | None, str]:
    """The law fitted to the points, or None and why not (a table's `note`): one size, or y the form cannot fit."""
    note = size_note(points.S)
    if note:
        return None, note
    try:
        return form.fit(points, y), ""
    except ValueError as exc:
        return None, str(exc)


@dataclass(frozen=True)
class LawRefits:
    """A law fitted to a group's points and refitted on every replicate (documents, the seeds where sizes have
    several, and the sizes' scatter: `LawNoise`), so it predicts its fitted quantity anywhere in S with an
    interval: figures' bands, another family's model."""

    form: FitForm
    law: FittedLaw
    params: dict[str, np.ndarray]  # the form's parameters refitted on every replicate, [B] each
    noise: LawNoise

    @classmethod
    def of(
        cls, group: pd.DataFrame, replicates: Replicates, form: FitForm, law: FittedLaw, refits: int, seed: int | None
    ) -> LawRefits:
        """`law`, fitted to the rows of `group` (one per model), refitted on their replicates."""
        points = Points.of(group["S"].to_numpy(dtype=np.float64))
        noise = law_noise(group, replicates, form, law, points, seed)
        return cls(form, law, noise.refit(form, law, points, refits), noise)

    def band(self, points: Points) -> np.ndarray:
        """The refitted laws' values at `points`: [B, len(points)] (NaN where a refit failed)."""
        with np.errstate(invalid="ignore", over="ignore"):
            return self.form.predict_replicates(self.params, points)

    def at(self, S: float, keys: Sequence[str]) -> tuple[float, np.ndarray]:
        """The law's value at S, and per replicate a new model's value there: the refit's, times a new size's
        deviation off the law, times a run's deviation off its size's mean where sizes have several seeds (drawn
        from the stream `keys` names)."""
        at = Points.of(S)
        point = float(self.form.predict(self.law, at)[0])
        new_run = self.noise.noise.new_run(self.noise.replicates, keys)
        return point, self.band(at)[:, 0] * np.exp(self.noise.new_size) * new_run


@dataclass(frozen=True)
class ExponentContrast:
    """alpha(a) - alpha(b) of two laws of the same models, refitted on replicates with every source of noise."""

    point: float
    replicates: np.ndarray  # [B] the difference refitted on every replicate
    noise: LawNoise  # of the law of y_a / y_b (log-linear forms), else of law a

    def row(self, level: float) -> dict[str, Any]:
        low, high = interval(self.replicates, level, self.point)
        return {"difference": self.point, "ci_low": float(low), "ci_high": float(high),
                "p_value": interval_p_value(self.replicates, self.point), "replicates": int(np.isfinite(self.replicates).sum()),
                **self.noise.columns(), "noise": self.noise.label}  # fmt: skip


def exponent_contrast(
    form: FitForm,
    points: Points,
    laws: tuple[FittedLaw, FittedLaw],
    y: tuple[np.ndarray, np.ndarray],
    document_reps: tuple[np.ndarray, np.ndarray],
    noise: Noise,
    keys: Sequence[str],
    refits: int,
    documents: tuple[Documents | None, Documents | None] = (None, None),
) -> ExponentContrast:
    """The difference of two laws' exponents over the same models, paired replicate by replicate.

    Where log y is linear in the parameters (the power law) the difference of two OLS exponents is the exponent
    of the law of y_a / y_b, so the contrast is that law, with its own document covariance (of the replicate-by-
    replicate ratios, not the sum of the two), its own tau^2 and lack of fit (`documents`: each law's units', where
    the documents test a law from them, `Noise.documents`). Other forms refit each law on its
    own replicates with the size level, their size deviations correlated as REML estimates in the two laws' joint
    residual space (`rankscale.laws.paired`: shared draws would leave the contrast about (tau_a - tau_b)^2)."""
    assert form.exponent is not None
    exponent = form.exponent
    point = float(laws[0].row()[exponent]) - float(laws[1].row()[exponent])
    if form.log_linear:
        with np.errstate(divide="ignore", invalid="ignore"):  # a replicate where a law's quantity is 0 or inf: NaN
            ratio, ratio_reps = y[0] / y[1], document_reps[0] / document_reps[1]
        law = form.fit(points, ratio)
        ratio_documents = None if documents[0] is None or documents[1] is None else documents[0].minus(documents[1])
        honest = LawNoise.of(form, law, points, ratio, ratio_reps, noise.with_documents(ratio_documents), keys)
        return ExponentContrast(point, form.fit_replicates(points, honest.replicates, law, refits)[exponent], honest)
    first, second = (LawNoise.of(form, law, points, v, reps, noise.with_documents(units), keys)
                     for law, v, reps, units in zip(laws, y, document_reps, documents, strict=True))  # fmt: skip
    rho = size_correlation_of(form, laws, points, y, document_reps, (first, second))
    each = (first, second.drawn(y[1], keys, rho))
    refitted = [n.refit(form, law, points, refits)[exponent] for n, law in zip(each, laws, strict=True)]
    return ExponentContrast(point, refitted[0] - refitted[1], each[0])


def law_k_rows(metrics: pd.DataFrame, ks: Sequence[int]) -> pd.DataFrame:
    """The rows of cross-entropy and of RBP_k at `ks` (`analysis.law_k`): the laws checked out of sample."""
    return metrics[(metrics["metric"] == "ce") | ((metrics["metric"] == "rbp") & metrics["k"].isin(list(ks)))]


def between_family_rows(metrics: pd.DataFrame, ks: Sequence[int]) -> pd.DataFrame:
    """`law_k_rows` and cross-entropy in bits per byte: what families with different tokenizers are compared on
    (within one tokenizer bpb is CE times a constant, so the laws of one family need it not)."""
    return metrics[metrics.index.isin(law_k_rows(metrics, ks).index) | (metrics["metric"] == "bpb")]

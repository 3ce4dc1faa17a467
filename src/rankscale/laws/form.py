"""What every fit form provides, so tables and figures can use any of them by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

RefittedParameters = dict[str, np.ndarray]  # a form's parameters refitted on bootstrap replicates: name -> [B]


@dataclass(frozen=True)
class Points:
    """Where a law is fitted or evaluated: model sizes S and, for laws in training tokens too, D."""

    S: np.ndarray
    training_tokens: np.ndarray | None  # D, for laws in (S, D)

    @classmethod
    def of(cls, S: Any) -> Points:
        """Sizes alone, for laws in S."""
        return cls(np.atleast_1d(np.asarray(S, dtype=np.float64)), None)

    @classmethod
    def joint(cls, S: Any, training_tokens: Any) -> Points:
        """Sizes and training tokens, for laws in (S, D)."""
        return cls(
            np.atleast_1d(np.asarray(S, dtype=np.float64)), np.atleast_1d(np.asarray(training_tokens, dtype=np.float64))
        )

    def __len__(self) -> int:
        return len(self.S)

    def take(self, index: Any) -> Points:
        return Points(self.S[index], None if self.training_tokens is None else self.training_tokens[index])


class FittedLaw(Protocol):
    def predict(self, points: Points) -> np.ndarray: ...

    def row(self) -> dict[str, float]: ...


@dataclass(frozen=True)
class FitForm:
    """A law y(S) (or y(S, D)): fitted to points, refitted on replicates, predicting from either.

    `fit` raises ValueError when the data cannot be fitted (too few sizes, y <= 0, ...);
    `fit_replicates(points, y [B, M], law, refits)` refits the replicates (NaN where one cannot
    be fitted; forms without a closed form refit at most `refits` of them, each started at `law`);
    `predict_replicates(parameters, points)` gives y [B, len(points)]; `scaled(law, factor)` the same form
    with every term multiplied by `factor`.
    """

    name: str
    columns: tuple[str, ...]  # the parameter columns `row()` gives and `from_row` reads
    n_params: int  # free parameters, for AICc
    fit: Callable[[Points, np.ndarray], FittedLaw]
    from_row: Callable[[Mapping[str, Any]], FittedLaw]
    fit_replicates: Callable[[Points, np.ndarray, FittedLaw, int], RefittedParameters]
    predict_replicates: Callable[[RefittedParameters, Points], np.ndarray]
    scaled: Callable[[FittedLaw, float], FittedLaw]  # the law times a factor (N y(S): an N-token sequence law)
    variables: tuple[str, ...] = ("S",)  # ("S", "D"): a law in size and training tokens
    exponent: str | None = "alpha"  # the parameter exponent contrasts compare (None: the form has none)
    bounds: dict[str, Bound] = field(default_factory=dict)  # parameters confined to a domain by the fit
    log_linear: bool = False  # log y is linear in the parameters (OLS): a contrast of two laws is the law of y1 / y2
    # `fit_replicates` refits every replicate at once at little cost (the joint law's vectorised least squares):
    # the size level then goes into the replicates it refits, as for a log-linear form, not through a linearisation
    batch_refits: bool = False
    # d log y-hat / d parameters [M, p] in closed form (columns less r2), where the form has one: `log_design` uses
    # it instead of central differences, whose rounding (~eps / 1e-6 in log space) is CPU-dependent
    log_jacobian: Callable[[FittedLaw, Points], np.ndarray] | None = None

    def predict(self, law: FittedLaw, points: Points) -> np.ndarray:
        return law.predict(points)

    def unidentified(self, law: FittedLaw, replicates: RefittedParameters, level_of_y: float) -> dict[str, str]:
        """Parameters the data cannot identify, with why: those at a bound of their domain in the fit, or in
        most refitted replicates. Their intervals would be points (every refit stops at the bound), so tables
        report them as not identified instead."""
        fitted = law.row()
        out = {}
        for name, bound in self.bounds.items():
            samples = np.asarray(replicates.get(name, []), dtype=np.float64)
            samples = samples[np.isfinite(samples)]
            at = bound.reached(fitted[name], level_of_y)
            share = float(np.mean([bound.reached(v, level_of_y) for v in samples])) if samples.size else 0.0
            if at or share > 0.5:
                where = "in the fit" if at else f"in {share:.0%} of the refits"
                out[name] = f"{name} at its bound {bound.describe()} {where}: not identified"
        return out

    def bounded_ends(self, replicates: RefittedParameters, level: float, level_of_y: float) -> dict[str, str]:
        """Parameters whose `level` percentile interval runs into a bound of their domain, naming every end that
        does (lower and upper): at least (1 - level) / 2 of the refits stop there, so that end is the bound, not a
        quantile of the parameter's noise (the interval is one-sided there)."""
        out = {}
        for name, ends in self._ends_at_bounds(replicates, level, level_of_y).items():
            said = " and ".join(f"{edge:g} ({share:.0%} of refits there)" for _, edge, share in ends)
            out[name] = f"{name}'s interval ends at its bound{'s' if len(ends) > 1 else ''} {said}"
        return out

    def spanning(self, replicates: RefittedParameters, level: float, level_of_y: float) -> dict[str, str]:
        """Parameters whose `level` interval runs into both ends of a finite domain: it spans every value the fit
        allows, so the data say nothing of the parameter (not identified, with why)."""
        out = {}
        for name, ends in self._ends_at_bounds(replicates, level, level_of_y).items():
            if len(ends) == 2:
                low, high = ends[0][1], ends[1][1]
                out[name] = f"{name}'s interval spans its whole domain [{low:g}, {high:g}]: not identified"
        return out

    def _ends_at_bounds(self, replicates: RefittedParameters, level: float,
                        level_of_y: float) -> dict[str, list[tuple[str, float, float]]]:  # fmt: skip
        """Per bounded parameter, each end ("low", "high") at least (1 - level) / 2 of its refits stop at, with the
        bound and that share."""
        out: dict[str, list[tuple[str, float, float]]] = {}
        for name, bound in self.bounds.items():
            samples = np.asarray(replicates.get(name, []), dtype=np.float64)
            samples = samples[np.isfinite(samples)]
            sides = [bound.side(v, level_of_y) for v in samples]
            for end, edge in (("low", bound.low), ("high", bound.high)):
                share = sides.count(end) / len(sides) if sides else 0.0
                if share >= (1.0 - level) / 2.0:
                    out.setdefault(name, []).append((end, edge, share))
        return out


@dataclass(frozen=True)
class Bound:
    """A parameter's domain in the fit: reached within 1e-6 of a bound (relative to the level of y for
    parameters in y's units, such as an irreducible floor E)."""

    low: float = -np.inf
    high: float = np.inf
    in_units_of_y: bool = False

    def reached(self, value: float, level_of_y: float) -> bool:
        return self.side(value, level_of_y) is not None

    def side(self, value: float, level_of_y: float) -> str | None:
        """ "low" or "high": the bound `value` is at; None inside the domain."""
        scale = abs(level_of_y) if self.in_units_of_y else 1.0
        tolerance = 1e-6 * max(scale, 1e-300)
        if value - self.low <= tolerance:
            return "low"
        return "high" if self.high - value <= tolerance else None

    def describe(self) -> str:
        return " or ".join(f"{v:g}" for v in (self.low, self.high) if np.isfinite(v))


def refit_each(
    form_fit: Callable[[Points, np.ndarray, Any], FittedLaw],
    columns: tuple[str, ...],
    points: Points,
    y: np.ndarray,
    start: Any,
    refits: int,
) -> RefittedParameters:
    """Parameters of a form without a closed form: the first `refits` rows of y refitted one by one from `start`."""
    rows = np.asarray(y, dtype=np.float64)[:refits]
    out = {name: np.full(len(rows), np.nan) for name in columns}
    for b, values in enumerate(rows):
        try:
            fitted = form_fit(points, values, start).row()
        except ValueError:
            continue
        for name in columns:
            out[name][b] = fitted[name]
    return out

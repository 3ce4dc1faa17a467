"""What every fit form provides, so tables and figures can use any of them by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

Replicates = dict[str, np.ndarray]  # a form's parameters refitted on bootstrap replicates: name -> [B]


@dataclass(frozen=True)
class Points:
    """Where a law is fitted or evaluated: model sizes S and, for laws in training tokens too, D."""

    S: np.ndarray
    D: np.ndarray | None = None

    @classmethod
    def of(cls, S: Any, D: Any = None) -> Points:
        return cls(
            np.atleast_1d(np.asarray(S, dtype=np.float64)),
            None if D is None else np.atleast_1d(np.asarray(D, dtype=np.float64)),
        )

    def __len__(self) -> int:
        return len(self.S)

    def take(self, index: Any) -> Points:
        return Points(self.S[index], None if self.D is None else self.D[index])


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
    fit_replicates: Callable[[Points, np.ndarray, FittedLaw, int], Replicates]
    predict_replicates: Callable[[Replicates, Points], np.ndarray]
    scaled: Callable[[FittedLaw, float], FittedLaw]  # the law times a factor (N y(S): an N-token sequence law)
    variables: tuple[str, ...] = ("S",)  # ("S", "D"): a law in size and training tokens
    exponent: str | None = "alpha"  # the parameter exponent contrasts compare (None: the form has none)

    def predict(self, law: FittedLaw, points: Points) -> np.ndarray:
        return law.predict(points)


def refit_each(
    form_fit: Callable[[Points, np.ndarray, Any], FittedLaw],
    columns: tuple[str, ...],
    points: Points,
    y: np.ndarray,
    start: Any,
    refits: int,
) -> Replicates:
    """Replicates of a form without a closed form: the first `refits` rows of y refitted one by one from `start`."""
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

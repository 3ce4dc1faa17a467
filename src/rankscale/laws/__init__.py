"""Fit forms: the laws fitted to a metric across model sizes S (and training tokens D).

`FORMS` is the registry. Every form fits a point estimate (`fit`), refits the bootstrap
replicates (`fit_replicates`), predicts from a fitted law (`predict`) and from replicate
parameters (`predict_replicates`), so tables and figures never need to know which form they
hold. `analysis.law_form` picks the form behind powerlaw_fits.csv, the contrasts, the
extrapolation and the figures' bands; `analysis.forms` lists those form_comparison.csv compares.
CONTRIBUTING.md, "A new fit form", says how to add one.
"""

from __future__ import annotations

from rankscale.laws.compare import aicc, compare_forms, leave_one_out_rmse
from rankscale.laws.form import FitForm, FittedLaw, Points, RefittedParameters
from rankscale.laws.joint import JOINT, JointLaw, fit_joint_law
from rankscale.laws.power import OFFSET_POWER_LAW, POWER_LAW, OffsetPowerLaw, PowerLaw, fit_power_law, ols, r_squared
from rankscale.registry import Registry

FORMS: Registry[FitForm] = Registry("fit form", (POWER_LAW, OFFSET_POWER_LAW, JOINT))


def size_forms() -> list[str]:
    """The forms of S alone: those analysis.law_form and analysis.forms may name."""
    return [name for name, form in FORMS.items() if form.variables == ("S",)]


__all__ = [
    "FORMS",
    "FitForm",
    "FittedLaw",
    "JointLaw",
    "OffsetPowerLaw",
    "Points",
    "PowerLaw",
    "RefittedParameters",
    "aicc",
    "compare_forms",
    "fit_joint_law",
    "fit_power_law",
    "leave_one_out_rmse",
    "ols",
    "r_squared",
    "size_forms",
]

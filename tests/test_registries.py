"""The registries are the one place to extend: a toy metric, figure and dataset source added the way
the README's development section says flow through the real workflow; a toy fit form through the
tables' code."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from rankscale.laws import FORMS, FitForm
from rankscale.tables import fits_table, read_table
from tests.conftest import REPO, copy_run, job_key, planned_jobs, snakemake

pytestmark = pytest.mark.slow

TOY_METRIC = """

METRICS["greedy_error"] = Metric(
    name="greedy_error",
    law="greedy_error",
    per_k=False,
    compute=lambda t: 1.0 - np.asarray(t["hits"], dtype=np.float64)[..., 0] / np.asarray(t["n"], dtype=np.float64),
    to_law=_identity,
    from_law=_identity,
    law_label="$1 - \\\\mathrm{RBP}_1$",
    label="$1 - \\\\mathrm{RBP}_1$",
)
"""

TOY_FORM = """


@dataclass(frozen=True)
class LogLinear:
    \"\"\"y = a + b log S.\"\"\"

    a: float
    b: float
    n: int

    def predict(self, size):
        return self.a + self.b * np.log(np.asarray(size, dtype=np.float64))

    def row(self):
        return {"a": self.a, "b": self.b}

    @classmethod
    def fit(cls, size, y):
        size, y = _check(size, y)
        b, a = np.polyfit(np.log(size), y, 1)
        return cls(float(a), float(b), len(y))

    @classmethod
    def from_row(cls, row):
        return cls(float(row["a"]), float(row["b"]), int(row.get("n_models", 0)))


FORMS["log_linear"] = FitForm("log_linear", ("a", "b"), LogLinear.fit, LogLinear.from_row, n_params=2)
"""

TOY_FIGURE = """

from rankscale.plots.common import grid as _grid  # noqa: E402
from rankscale.plots.laws import law_panel as _law_panel  # noqa: E402


def _greedy_error(data, settings, png):
    fig, axes = _grid(1, len(data.datasets))
    for j, dataset in enumerate(data.datasets):
        _law_panel(axes[0, j], data, dataset, "greedy_error", None)
    save(fig, png)


FIGURES["toy_greedy_error"] = Figure(
    name="toy_greedy_error",
    plot=_greedy_error,
    caption="Toy figure: the greedy error rate 1 - RBP_1 against S.",
    tables=("metrics", "powerlaw_fits"),
)
"""

TOY_SOURCE = '''
"""A toy source: small generated Python functions, `count` of them."""

from rankscale.corpus import Document
from rankscale.sources.base import Source


def documents(spec, where, revision):
    for i in range(spec["count"]):
        yield Document(f"toy:{i}", f"def add_{i}(x):\\n    return x + {i}\\n\\n\\nprint(add_{i}({i * 7}))\\n")


def provenance(spec, resolved):
    return {"resolved_revision": f"toy {spec['count']}"}


SOURCE = Source(documents=documents, provenance=provenance)
'''


def add_toy_source_to_schema(path: Path) -> None:
    """What a contributor adds to config/schema.yaml: the source's own keys, as `$defs/<name>_dataset`
    (its name comes from `SOURCES`; the keys every source shares are `$defs/dataset_common`)."""
    schema = yaml.safe_load(path.read_text())
    schema["$defs"]["toy_dataset"] = {
        "allOf": [{"$ref": "#/$defs/dataset_common"}],
        "properties": {"count": {"type": "integer", "minimum": 1, "default": 20}},
    }
    path.write_text(yaml.safe_dump(schema, sort_keys=False))


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


@pytest.fixture(scope="module")
def extended(smoke_run: Path, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The smoke run, then a toy metric, figure and dataset source added as the README says, rerun."""
    work = copy_run(smoke_run, tmp_path_factory.mktemp("registries") / "run")
    append(work / "src/rankscale/metrics.py", TOY_METRIC)
    append(work / "src/rankscale/laws.py", TOY_FORM)
    append(work / "src/rankscale/plots/__init__.py", TOY_FIGURE)
    (work / "src/rankscale/sources/toy.py").write_text(TOY_SOURCE)
    append(
        work / "src/rankscale/sources/__init__.py",
        '\nfrom rankscale.sources import toy  # noqa: E402\n\nSOURCES["toy"] = toy.SOURCE\n',
    )
    add_toy_source_to_schema(work / "config/schema.yaml")
    config = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    config["datasets"]["toy"] = {"source": "toy", "count": 30}
    config["analysis"]["forms"] = ["power_law", "log_linear"]
    (work / "config/toy.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    args = ("--configfile", "config/toy.yaml")
    plan = planned_jobs(work, *args)
    result = snakemake(work, "--cores", "2", *args)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    return SimpleNamespace(work=work, plan=plan, config=config)


def test_a_new_dataset_source_runs_through_every_step(extended):
    models = [s["name"] for s in extended.config["ladder"]["sizes"]]
    assert extended.plan[job_key("corpus", dataset="toy")] == 1
    assert all(extended.plan[job_key("extract", model=m, dataset="toy")] == 1 for m in models)
    # the ladder's training text is kept free of every evaluated dataset's text: a new dataset retrains it
    assert all(extended.plan[job_key("ladder_train", model=m)] == 1 for m in models)
    corpus = (extended.work / "results/corpus/toy.jsonl").read_text().splitlines()
    assert len(corpus) == 30 and "return x + 29" in corpus[-1]
    metrics = read_table(extended.work / "results/tables/metrics.csv")
    assert set(metrics[metrics["dataset"] == "toy"]["model"]) == set(models)


def test_a_new_metric_is_tabled_and_fitted(extended):
    metrics = read_table(extended.work / "results/tables/metrics.csv")
    error = metrics[metrics["metric"] == "greedy_error"].set_index(["model", "dataset"])["value"]
    rbp1 = metrics[(metrics["metric"] == "rbp") & (metrics["k"] == 1)].set_index(["model", "dataset"])["value"]
    assert len(error) == 3 * 3
    np.testing.assert_allclose(error.sort_index(), 1 - rbp1.sort_index(), rtol=0, atol=1e-15)
    fits = read_table(extended.work / "results/tables/powerlaw_fits.csv")
    rows = fits[fits["metric"] == "greedy_error"]
    assert len(rows) == 3 and np.isfinite(rows["alpha"]).all() and rows["k"].isna().all()


def test_a_new_fit_form_is_compared_by_the_real_rule(extended):
    forms = read_table(extended.work / "results/tables/form_comparison.csv")
    toy = forms[forms["form"] == "log_linear"]
    assert len(toy) == len(forms) / 2 and toy["a"].notna().all() and toy["b"].notna().all()
    assert toy["loo_rmse"].notna().all() and set(forms.loc[forms["preferred"], "form"]) <= {"power_law", "log_linear"}


def test_a_new_figure_is_drawn_by_its_own_job(extended):
    assert extended.plan[job_key("figure", figure="toy_greedy_error")] == 1
    for ext in ("png", "pdf"):
        assert (extended.work / f"results/figures/toy_greedy_error.{ext}").stat().st_size > 5000
    assert planned_jobs(extended.work, "--configfile", "config/toy.yaml") == {}  # and up to date afterwards


@dataclass(frozen=True)
class Linear:
    """A toy fit form: y = a + b log S."""

    a: float
    b: float
    n: int

    def predict(self, size: Any) -> np.ndarray:
        return self.a + self.b * np.log(np.asarray(size, dtype=np.float64))

    def row(self) -> dict[str, float]:
        return {"a": self.a, "b": self.b}

    @classmethod
    def fit(cls, size: np.ndarray, y: np.ndarray) -> Linear:
        b, a = np.polyfit(np.log(size), y, 1)
        return cls(float(a), float(b), len(y))

    @classmethod
    def from_row(cls, row: Any) -> Linear:
        return cls(float(row["a"]), float(row["b"]), int(row["n_models"]))


def test_a_new_fit_form_is_fitted_and_predicts_from_its_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(FORMS, "log_linear", FitForm("log_linear", ("a", "b"), Linear.fit, Linear.from_row))
    sizes = np.array([1e6, 1e7, 1e8, 1e9])
    rows = [
        {
            "family": "f",
            "model": f"m{i}",
            "dataset": "d",
            "S": s,
            "metric": "ce",
            "k": pd.NA,
            "value": 5.0 - 0.2 * np.log(s),
        }
        for i, s in enumerate(sizes)
    ]
    metrics = pd.DataFrame(rows).astype({"k": "Int64"})
    table = fits_table(metrics, "log_linear")
    assert list(table.columns) == ["family", "dataset", "metric", "k", "n_models", "S_min", "S_max", "a", "b", "note"]
    law = FORMS["log_linear"].from_row(table.iloc[0])
    assert law.b == pytest.approx(-0.2) and law.a == pytest.approx(5.0)
    np.testing.assert_allclose(law.predict(sizes), metrics["value"], rtol=1e-12)

"""The manifest's per-rule wall times count every rule that writes a benchmark, each job's file where its rule
writes it (rankscale.manifest.benchmark_files): a rule left out of the list would be missing from the manifest."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from rankscale.config import validate
from rankscale.manifest import benchmark_files, rule_times
from rankscale.plan import build_plan, layout
from rankscale.tables import TABLES
from tests.conftest import REPO


def rules_with_a_benchmark() -> dict[str, str]:
    """Every rule of workflow/rules/*.smk with a `benchmark:` directive, and that directive's expression."""
    found = {}
    for path in sorted((REPO / "workflow/rules").glob("*.smk")):
        for block in re.split(r"^(?=rule \w+:)", path.read_text(), flags=re.M):
            name = re.match(r"rule (\w+):", block)
            directive = re.search(r"^    benchmark:\n\s+(.+)$", block, re.M)
            if name and directive:
                found[name[1]] = directive[1].strip()
    return found


def test_every_rule_with_a_benchmark_is_counted() -> None:
    config = validate(yaml.safe_load((REPO / "config/smoke.yaml").read_text()))
    plans = build_plan(config, check_paths=False, validated=True)
    datasets = sorted(config["datasets"])
    files = benchmark_files(layout(config, plans), plans, datasets, TABLES, ["fig3"], ["fam"])
    rules = rules_with_a_benchmark()
    assert set(files) == set(rules) and "trajectories" in rules
    assert rules["trajectories"] == 'LAYOUT.run_benchmark("trajectories", "{family}/{dataset}")'
    run = layout(config, plans).out
    assert files["trajectories"] == [Path(f"{run}/benchmarks/trajectories/fam/{d}.tsv") for d in datasets]
    assert len(files["extract"]) == len(files["summarize"]) == len(datasets) * len(plans) > 0
    assert files["ladder_train"] == [Path(plans.ladder.benchmark(m)) for m, p in plans.items() if p.ladder]


def test_rule_times_sum_each_rules_jobs(tmp_path: Path) -> None:
    """Two trajectories jobs of 1.5 s and 2.25 s: 2 jobs, 3.8 s (rounded to 0.1); a missing or empty file: no job."""
    paths = []
    for i, seconds in enumerate((1.5, 2.25)):
        paths.append(tmp_path / f"{i}.tsv")
        paths[-1].write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:00:01\t10\n")
    (tmp_path / "empty.tsv").write_text("")
    times = rule_times({"trajectories": [*paths, tmp_path / "empty.tsv", tmp_path / "missing.tsv"], "table": []})
    assert set(times) == {"trajectories"}
    assert (times["trajectories"].jobs, times["trajectories"].wall_s) == (2, 3.8)

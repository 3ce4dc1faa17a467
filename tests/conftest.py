"""Shared fixtures: a copy of the workflow in a temporary directory, run for real."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WORKFLOW_FILES = ("workflow", "config", "src", "profiles")


def benchmark_module(name: str):  # -> the module benchmarks/<name>.py
    """A benchmark script imported as a module (its simulations are what some tests run at a smaller size); its
    sibling scripts import as they do when it runs (`python benchmarks/<name>.py`)."""
    import importlib.util

    if str(REPO / "benchmarks") not in sys.path:
        sys.path.insert(0, str(REPO / "benchmarks"))

    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def copy_workflow(dest: Path) -> Path:
    """Copy what a clone holds of the workflow (no results) into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def snakemake(workdir: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run the real Snakemake CLI (this interpreter's) in `workdir`."""
    from tests.tolerances import workflow_env  # RANKSCALE_TEST_WORKFLOW_ENV: its kernels unlike the tests' own

    env = workflow_env({**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def stop_process(proc: subprocess.Popen) -> None:
    """Terminate a daemon a test started; kill it if it does not exit."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def copy_run(src: Path, dest: Path) -> Path:
    """Copy a finished workflow directory with its metadata, keeping every modification time."""
    shutil.copytree(src, dest, symlinks=True, copy_function=shutil.copy2)
    return dest


def files(workdir: Path, *config_files: str):  # -> rankscale.layout.Layout
    """Where the workflow in `workdir` puts the files of `--configfile config_files` (keyed paths, results/<run>/)."""
    from contextlib import chdir

    from rankscale.share import configured

    with chdir(workdir):  # relative `path:` models resolve (and their weights digests cache) as Snakemake's do there
        return configured(list(config_files), Path("."))[2]


def job_key(rule: str, **wildcards: str) -> str:
    """How `planned_jobs` names a job: 'rule' or 'rule[k=v,...]' with wildcards sorted by name."""
    return f"{rule}[{','.join(f'{k}={v}' for k, v in sorted(wildcards.items()))}]" if wildcards else rule


KEYED = ("corpus", "tokens", "ranks", "summary")  # wildcards holding a file stem `<dataset>-<key>` (rankscale.layout)


def planned_jobs(workdir: Path, *args: str) -> Counter[str]:
    """The jobs `snakemake -n` plans, parsed from its per-job blocks and checked against its job-stats total.

    A keyed file's stem is named by its dataset (`extract[dataset=humaneval,model=m]`): the key follows from the
    configuration (tests/test_run_dirs.py checks the keys themselves)."""
    from rankscale.canon import keyed_name

    result = snakemake(workdir, "-n", *args)
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-5000:]
    jobs: Counter[str] = Counter()
    rule: str | None = None
    wildcards: dict[str, str] = {}
    for line in text.splitlines() + [""]:
        if match := re.fullmatch(r"(?:local)?rule (\w+):", line.strip()):
            rule, wildcards = match.group(1), {}
        elif rule and line.strip().startswith("wildcards:"):
            wildcards = dict(pair.split("=", 1) for pair in line.split(":", 1)[1].strip().split(", "))
            for name in KEYED:
                if name in wildcards:
                    wildcards["dataset"] = keyed_name(wildcards.pop(name))
        elif rule and not line.startswith(" "):
            jobs[job_key(rule, **wildcards)] += 1
            rule = None
    total = re.search(r"^total\s+(\d+)$", text, re.MULTILINE)
    assert sum(jobs.values()) == (int(total.group(1)) if total else 0), text[-5000:]
    return jobs


SMOKE_CONFIG = (REPO, "config/smoke.yaml")  # (workflow directory, configuration file) most tests run


def study_figures(where: tuple[Path, str] = SMOKE_CONFIG) -> list[str]:
    """The figures a study draws (`where`: its directory and configuration file): every registered one but those
    it leaves out (`rankscale.plots.left_out`: no checkpoints, no seeds)."""
    from contextlib import chdir

    from rankscale.plots import FIGURES, left_out
    from rankscale.share import configured

    with chdir(where[0]):
        plans = configured([where[1]], Path("."))[1]
    skipped = left_out([plan.info() for plan in plans.values()])
    return [f for f in FIGURES if f not in skipped]


def drawn_figures(results: Path) -> list[str]:
    """The figures the run in `results` (results/<run>) draws, from the models its metrics.csv holds: every
    registered one but those it leaves out (`rankscale.plots.left_out`)."""
    import pandas as pd

    from rankscale.plots import FIGURES, left_out

    models = pd.read_csv(results / "tables/metrics.csv").drop_duplicates("model")
    skipped = left_out(models[["family", "final", "replica_of"]].to_dict("records"))
    return [f for f in FIGURES if f not in skipped]


def output_jobs(
    tables: Iterable[str] | None = None, figures: Iterable[str] | None = None, where: tuple[Path, str] = SMOKE_CONFIG
) -> Counter[str]:
    """Jobs of these tables and figures (by default every registered table and the figures the study `where`
    draws: config/smoke.yaml's) plus `all`."""
    from rankscale.tables import TABLES

    jobs = Counter(job_key("table", table=t) for t in (TABLES if tables is None else tables))
    jobs.update(job_key("figure", figure=f) for f in (study_figures(where) if figures is None else figures))
    return jobs + Counter(["all"])


def summary_outputs() -> Counter[str]:
    """Jobs of the tables and figures that read summaries, directly or through a table they need, plus `all`: what
    new summaries rerun when no rank array changed (the token tables and Fig. 15 read the trajectories only)."""
    from rankscale.plots import FIGURES
    from rankscale.tables import TABLES

    tables = {n for n, t in TABLES.items() if t.summaries or t.resampled}
    while grown := {n for n, t in TABLES.items() if n not in tables and set(t.needs) & tables}:
        tables |= grown
    figures = [
        n for n in study_figures() if FIGURES[n].hists or FIGURES[n].resampled or set(FIGURES[n].tables) & tables
    ]
    return output_jobs([n for n in TABLES if n in tables], figures)


def trajectory_jobs(
    families: Iterable[str] = ("ladder",), datasets: Iterable[str] = ("humaneval", "pydoc")
) -> Counter[str]:
    """Jobs of rule `trajectories`, one per family x dataset (defaults: config/smoke.yaml's ladder family and
    datasets): a family's rerun when one of its rank arrays or its list of models changes, or in a new run
    directory (results/<run>/trajectories/)."""
    return Counter(job_key("trajectories", family=f, dataset=d) for f in families for d in datasets)


def file_states(root: Path, *patterns: str) -> dict[str, tuple[str, int]]:
    """SHA-256 and modification time (ns) of every file matching the glob patterns under `root`."""
    return {
        str(path.relative_to(root)): (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
        for pattern in patterns
        for path in sorted(root.glob(pattern))
        if path.is_file()
    }


def assert_modes(work: Path, ladder: str, umask: int) -> None:
    """Outputs have the modes open()/mkdir give under `umask` (not the 0600/0700 of mkstemp/mkdtemp)."""
    checked = 0
    for pattern in (
        "results/ranks/*/*",
        "results/tokens/*/*",
        "results/corpus/*",
        "results/*/tables/*",
        "results/*/figures/*",
        f"{ladder}/*",
        f"{ladder}/models/*",
        f"{ladder}/models/*/*",
        f"{ladder}/tokenizer/*",
    ):
        for path in work.glob(pattern):
            want = (0o777 if path.is_dir() else 0o666) & ~umask
            mode = stat.S_IMODE(path.stat().st_mode)
            assert mode == want, f"{path}: mode {oct(mode)}, umask {oct(umask)} says {oct(want)}"
            checked += 1
    assert checked > 50, checked


# The slowest files first (.ci/run's seconds per file; benchmarks/RESULTS.md, the test suite): two workers take files
# in this order (pyproject.toml: --dist loadfile --no-loadscope-reorder), so the last one to start is short. The
# first builds the smoke run most files share, while the second runs test_pretrained, which needs none of it.
SLOWEST_FIRST = (
    "test_faults",
    "test_pretrained",
    "test_slurm",
    "test_rerun",
    "test_incremental",
    "test_paper",
    "test_seeds",
    "test_training_axis",
    "test_hardening",
    "test_registries",
    "test_run_dirs",
    "test_single_models",
    "test_module_import",
    "test_sharing",
    "test_errors",
    "test_downloads",
    "test_extract",
    "test_fuzz_config",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the files in SLOWEST_FIRST's order, the others after them in their own (a stable sort)."""
    order = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: order.get(item.path.stem, len(order)))


SMOKE_OUTPUT = "smoke-run.out"  # in the smoke run's directory: the run's stdout and stderr


def run_smoke(workdir: Path) -> Path:
    """The smoke configuration, run end to end in a fresh copy of the workflow at `workdir`."""
    from tests.tolerances import extraction_threads

    copy_workflow(workdir)
    threads = extraction_threads()  # RANKSCALE_TEST_EXTRACTION_THREADS, to make the paths differ on purpose
    extra = ["--set-threads", f"extract={threads}"] if threads else []
    result = snakemake(workdir, "--cores", "2", "--configfile", "config/smoke.yaml", *extra)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    (workdir / SMOKE_OUTPUT).write_text(result.stdout + result.stderr)  # what the run said (its summary at the end)
    return workdir


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke configuration run end to end once per test session, shared by pytest-xdist's workers.

    The first worker to ask runs it under a file lock, the others wait for it and read it (the pytest-xdist
    recipe for a session fixture): a test copies it (`copy_run`) before it changes anything."""
    from filelock import FileLock

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return run_smoke(tmp_path_factory.mktemp("smoke"))
    shared = tmp_path_factory.getbasetemp().parent  # the session's folder, above each worker's own
    workdir, done, failed = shared / "smoke", shared / "smoke.done", shared / "smoke.failed"
    with FileLock(shared / "smoke.lock"):
        if failed.is_file():
            pytest.fail(f"the smoke run failed in another worker:\n{failed.read_text()}")
        if not done.is_file():
            try:
                run_smoke(workdir)
            except AssertionError as error:
                failed.write_text(str(error))
                raise
            done.write_text("")
    return workdir

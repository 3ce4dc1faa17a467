"""What verifying the summaries once per file version saves, on a finished run.

Every table and figure job that reads bootstrap replicates (or rank histograms) checks each summary's
`.boot.npz` (`.hist.npz`) against the checksum its summary records. Before, each such job hashed every
file it read; now a file is hashed once, by the summarize job that writes it, and each reader compares a
stamp (`rankscale.atomic.checksum_matches`). This script times both ways for one reading job over all of
the run's summaries, and multiplies by the number of reading jobs the run has.

    python benchmarks/summary_checksums.py --run-dir <a finished default run> [--configfile FILE ...]

The summaries are those of --configfile (paths relative to the run directory) or, without it, every one
under results/summary/ (`<model>/<dataset>-<key>.json`, of whatever configurations ran there).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from rankscale.atomic import checksum_matches, remember_checksum, sha256_file
from rankscale.layout import Layout, fill
from rankscale.plots import FIGURES
from rankscale.summary import SummaryPaths, read_summary
from rankscale.tables import TABLES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--configfile", nargs="+", help="only this configuration's summaries (relative to --run-dir)")
    args = parser.parse_args()
    files: dict[str, list[tuple[Path, str]]] = {"boot": [], "hist": []}
    for path in summary_files(args.run_dir, args.configfile):
        summary, paths = read_summary(path), SummaryPaths.beside(path)
        files["boot"].append((paths.boot, summary.files["boot"]))
        files["hist"].append((paths.hist, summary.files["hist"]))
    readers = {
        "boot": sum(t.resampled for t in TABLES.values()) + sum(f.resampled for f in FIGURES.values()),
        "hist": sum(bool(f.hists) for f in FIGURES.values()),
    }
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "checksums.json"
        for kind in files:
            for path, checksum in files[kind]:
                remember_checksum(path, checksum, cache)  # what the summarize job records as it writes
        total_old = total_new = 0.0
        for kind, pairs in files.items():
            size = sum(os.path.getsize(p) for p, _ in pairs)
            old = min(_time(_hashing, pairs) for _ in range(args.repeats))
            new = min(_time(_stamps, pairs, cache) for _ in range(args.repeats))
            total_old += old * readers[kind]
            total_new += new * readers[kind]
            print(f"{kind}: {len(pairs)} files, {size / 1e6:.1f} MB; one reading job: hashing {old:.3f} s, "
                  f"stamps {new:.4f} s; {readers[kind]} reading jobs")  # fmt: skip
        print(f"per run: {total_old:.2f} s of hashing before, {total_new:.2f} s now (job time, summed over jobs)")


def summary_files(run_dir: Path, config_files: list[str] | None) -> list[Path]:
    """Every summary JSON of the configuration `config_files` in `run_dir`, or every one there when none is given."""
    if config_files:
        from rankscale.share import configured

        config, plans, layout = configured(config_files, run_dir)
        return [run_dir / layout.summary(m, d) for m in plans for d in sorted(config["datasets"])]
    # results/summary/<model>/ holds <dataset>-<key>.json beside its .hist.npz and .boot.npz: no other JSON
    return sorted(run_dir.glob(f"{fill(Layout.SUMMARY, model='*', summary='*')}.json"))


def _hashing(pairs: list[tuple[Path, str]]) -> None:
    assert all(sha256_file(p) == c for p, c in pairs)  # how every reading job checked them before


def _stamps(pairs: list[tuple[Path, str]], cache: Path) -> None:
    assert all(checksum_matches(p, c, cache) for p, c in pairs)


def _time(work, *args) -> float:
    start = time.perf_counter()
    work(*args)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()

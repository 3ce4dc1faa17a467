"""rankscale imported as a Snakemake module into a user's own pipeline (docs/pipelines.md).

The user's Snakefile lives in a directory of its own, names this checkout's workflow/Snakefile in `module`,
renames every rule with `use rule * from rankscale as rankscale_*`, adds a rule of its own that reads every table
(the figures are drawn by the direct runs' tests), and calls rankscale's `onsuccess` from its own. The smoke
configuration run that way must give the tables of a direct run byte for byte, and the run's manifest and array
index.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO, snakemake

pytestmark = pytest.mark.slow

USER_SNAKEFILE = """\
configfile: "config/smoke.yaml"


module rankscale:
    snakefile:
        "{snakefile}"
    config:
        config


use rule * from rankscale as rankscale_*


rule count_laws:
    input:
        fits="results/smoke/tables/powerlaw_fits.csv",
        tables=[path for path in rules.rankscale_all.input if path.endswith(".csv")],  # every table (no figures)
    output:
        "laws.txt",
    run:
        import pandas as pd

        with open(output[0], "w") as out:
            out.write(f"{{len(pd.read_csv(input.fits))}} laws\\n")


onsuccess:
    rankscale.onsuccess()
"""


def user_pipeline(where: Path) -> Path:
    """A user's own pipeline directory that imports this checkout's workflow as a module (USER_SNAKEFILE)."""
    user = where / "my-pipeline"
    (user / "config").mkdir(parents=True)
    (user / "config/smoke.yaml").write_text((REPO / "config/smoke.yaml").read_text())
    (user / "Snakefile").write_text(USER_SNAKEFILE.format(snakefile=REPO / "workflow/Snakefile"))
    return user


def test_a_module_import_plans_without_a_warning(tmp_path: Path) -> None:
    """Rules renamed by `use rule * as rankscale_*` are local by their own `localrule: True`: no `localrules:` list
    names rules the importing workflow does not have, so Snakemake has nothing to warn of (tests/test_slurm.py
    checks which rules are local)."""
    result = snakemake(user_pipeline(tmp_path), "-n", "--cores", "1", "count_laws")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert "localrules directive" not in output and "not present in the Snakefile" not in output, output[-5000:]
    assert "rule rankscale_table:" in output  # the module's rules, under their new names


def test_rankscale_as_a_module_gives_the_direct_runs_tables(smoke_run: Path, tmp_path: Path) -> None:
    user = user_pipeline(tmp_path)

    result = snakemake(user, "--cores", "2", "count_laws")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]

    direct, imported = smoke_run / "results/smoke/tables", user / "results/smoke/tables"
    names = sorted(p.name for p in direct.glob("*.csv"))
    assert len(names) >= 24 and names == sorted(p.name for p in imported.glob("*.csv"))
    differing = [n for n in names if (direct / n).read_bytes() != (imported / n).read_bytes()]
    assert not differing, f"tables that differ from the direct run's: {differing}"

    fits = pd.read_csv(imported / "powerlaw_fits.csv")
    assert (user / "laws.txt").read_text() == f"{len(fits)} laws\n"
    # rankscale's onsuccess ran through the user's: the manifest, the array index and the run's summary
    assert (user / "results/smoke/manifest.json").is_file() and (user / "results/smoke/arrays.json").is_file()
    assert "rankscale: results in results/smoke/" in output
    # the module's rules ran under their new names
    assert "rule rankscale_extract:" in output and "rule rankscale_table:" in output

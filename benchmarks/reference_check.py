"""Recompute ranks and log-probs independently and compare them with the workflow's arrays.

The reference shares no scoring code with rankscale.extract: one window at a time, the model's
own full logits (`model(input_ids).logits`) in float32, a brute-force count over the tokenizer's
real vocabulary with the array's rank convention, and a float32 log-softmax; its windows are cut
by its own loop from the settings in the array's sidecar. Run it in the workflow's directory:

    python benchmarks/reference_check.py results/ranks/ladder-l4-d256/humaneval-<key>.npz [more.npz ...]

An array's token file is the one under results/tokens/<its tokenizer_key>/<its dataset>-<key>.npz whose
checksum its sidecar records (token files are keyed by what they mean: rankscale.layout).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # this checkout's package

from rankscale.canon import keyed_name  # noqa: E402
from rankscale.identity import OWN_SHA, TOKENS_SHA, RankIdentity  # noqa: E402
from rankscale.layout import Layout  # noqa: E402
from rankscale.tokens import load_tokens  # noqa: E402


def token_file(meta: dict, root: Path = Path(".")) -> Path:
    """The token file the array with sidecar `meta` was scored from: its tokenizer's and dataset's, by checksum."""
    folder = root / Layout.tokens_dir(meta["tokenizer_key"])
    found = [
        path
        for path in sorted(folder.glob(f"{meta['dataset']}-*.npz"))
        if keyed_name(path.stem) == meta["dataset"]  # not another dataset whose name continues with "-..."
        and Path(f"{path}.json").exists()
        and json.loads(Path(f"{path}.json").read_text()).get(OWN_SHA) == meta[TOKENS_SHA]
    ]
    if not found:
        raise SystemExit(f"no token file of {meta['dataset']!r} in {folder} has checksum {meta[TOKENS_SHA]}")
    return found[0]  # equal checksums: the same token ids, whichever file


def check(npz: Path) -> tuple[int, int, float]:
    """Return (tokens, rank mismatches, max |log-prob difference|) for one rank array."""
    meta = json.loads(npz.with_suffix(".json").read_text())
    identity = RankIdentity.from_sidecar(meta)
    # float32 sums depend on how BLAS splits work over threads: use the extraction's count
    torch.set_num_threads(int(meta.get("threads", torch.get_num_threads())))
    arrays = np.load(npz)
    model = AutoModelForCausalLM.from_pretrained(identity.location, dtype=torch.float32).eval()
    vocab = len(AutoTokenizer.from_pretrained(identity.tokenizer))
    corpus = load_tokens(token_file(meta))
    length = identity.max_length
    stride = identity.stride or length // 2
    i, mismatches, worst = 0, 0, 0.0
    with torch.no_grad():
        for d in range(len(corpus.offsets) - 1):
            doc = corpus.doc(d)
            first, end, count = int(corpus.first_targets()[d]), min(length, len(doc)), 1
            while first < end:
                start = max(0, end - length)
                ids = torch.as_tensor(doc[start:end], dtype=torch.long)[None]
                logits = model(input_ids=ids).logits[0, :, :vocab].float()
                for p in range(first, end):
                    row, t = logits[p - 1 - start], int(doc[p])
                    rank = (row >= row[t]).sum() if identity.ties == "ge" else (row > row[t]).sum() + 1
                    mismatches += int(arrays["rank"][i]) != int(rank)
                    worst = max(worst, abs(float(arrays["logprob"][i]) - float(torch.log_softmax(row, 0)[t])))
                    i += 1
                if end == len(doc) or count == identity.max_windows_per_doc:
                    break
                first, end, count = end, min(end + stride, len(doc)), count + 1
    assert i == arrays["rank"].size, f"{npz}: reference scored {i} tokens, array has {arrays['rank'].size}"
    return i, mismatches, worst


if __name__ == "__main__":
    for path in map(Path, sys.argv[1:]):
        n, bad, worst = check(path)
        print(f"{path}: {n} tokens, {bad} rank mismatches, max |delta log p| = {worst:.2e}")

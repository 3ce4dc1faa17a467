"""Recompute ranks and log-probs independently and compare them with the workflow's arrays.

The reference shares no scoring code with rankscale.extract: one window at a time, the model's
own full logits (`model(input_ids).logits`) in float32, a brute-force count over the tokenizer's
real vocabulary with the array's rank convention, and a float32 log-softmax; its windows are cut
by its own loop from the settings in the array's sidecar. Run it in the workflow's directory:

    python benchmarks/reference_check.py results/ranks/ladder-l4-d256/humaneval.npz [more.npz ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # this checkout's package

from rankscale.identity import RankIdentity  # noqa: E402
from rankscale.tokens import load_tokens  # noqa: E402


def check(npz: Path) -> tuple[int, int, float]:
    """Return (tokens, rank mismatches, max |log-prob difference|) for one rank array."""
    meta = json.loads(npz.with_suffix(".json").read_text())
    identity = RankIdentity.from_sidecar(meta)
    # float32 sums depend on how BLAS splits work over threads: use the extraction's count
    torch.set_num_threads(int(meta.get("threads", torch.get_num_threads())))
    arrays = np.load(npz)
    model = AutoModelForCausalLM.from_pretrained(identity.location, dtype=torch.float32).eval()
    vocab = len(AutoTokenizer.from_pretrained(identity.tokenizer))
    corpus = load_tokens(Path("results/tokens") / meta["tokenizer_key"] / f"{meta['dataset']}.npz")
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

"""Recompute ranks and log-probs independently and compare them with the workflow's arrays.

The reference shares no code with rankscale.extract: one window at a time, the model's own
full logits (`model(input_ids).logits`), a brute-force count over the tokenizer's real
vocabulary and a float32 log-softmax. Usage:

    python benchmarks/reference_check.py results/ranks/ladder-l4-d256/humaneval.npz [more.npz ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def check(npz: Path) -> tuple[int, int, float]:
    """Return (tokens, rank mismatches, max |log-prob difference|) for one rank array."""
    meta = json.loads(npz.with_suffix(".json").read_text())
    # float32 sums depend on how BLAS splits work over threads: use the extraction's count
    torch.set_num_threads(int(meta.get("threads", torch.get_num_threads())))
    arrays = np.load(npz)
    model = AutoModelForCausalLM.from_pretrained(meta["location"], dtype=torch.float32).eval()
    vocab = len(AutoTokenizer.from_pretrained(meta["tokenizer"]))
    tokens_file = np.load(Path("results/tokens") / meta.get("tokenizer_key", "ladder") / f"{meta['dataset']}.npz")
    ids, offsets = tokens_file["ids"], tokens_file["offsets"]
    length = meta["windows"]["max_length"]
    stride = meta["windows"]["stride"] or length // 2
    i, mismatches, worst = 0, 0, 0.0
    with torch.no_grad():
        for d in range(len(offsets) - 1):
            doc = ids[offsets[d] : offsets[d + 1]]
            first, end = 1, min(length, len(doc))
            while True:
                start = max(0, end - length)
                logits = (
                    model(input_ids=torch.as_tensor(doc[start:end], dtype=torch.long)[None])
                    .logits[0, :, :vocab]
                    .float()
                )
                for p in range(first, end):
                    row, t = logits[p - 1 - start], int(doc[p])
                    mismatches += int(arrays["rank"][i]) != int((row >= row[t]).sum())
                    worst = max(worst, abs(float(arrays["logprob"][i]) - float(torch.log_softmax(row, 0)[t])))
                    i += 1
                if end == len(doc):
                    break
                first, end = end, min(end + stride, len(doc))
    assert i == arrays["rank"].size, f"{npz}: reference scored {i} tokens, array has {arrays['rank'].size}"
    return i, mismatches, worst


if __name__ == "__main__":
    for path in map(Path, sys.argv[1:]):
        n, bad, worst = check(path)
        print(f"{path}: {n} tokens, {bad} rank mismatches, max |delta log p| = {worst:.2e}")

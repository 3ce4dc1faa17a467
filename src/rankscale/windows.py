"""Token windows: how documents are cut into model inputs, and which targets each scores.

Documents are tokenized separately and never share a window (no cross-document context).
Target position p of a document (p >= 1; the first token has no context and is never
scored) is predicted from the tokens before it inside one window. The first window of a
document covers tokens [0, max_length) and scores targets 1..max_length-1; each further
window scores the next `stride` targets and starts `max_length` tokens before its end, so
every scored target keeps at least `max_length - stride` tokens of context. Every scored
target is scored exactly once. `max_windows_per_doc: 1` reproduces the authors' setup
(one truncated window per document).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# How documents are cut into windows; a dataset's `windows:` overrides them for every model.
WINDOW_KEYS = ("max_length", "stride", "max_windows_per_doc")


@dataclass(frozen=True)
class WindowSpec:
    max_length: int
    stride: int | None  # None: max_length // 2
    max_windows_per_doc: int | None  # None: every window the document needs

    def resolved_stride(self) -> int:
        stride = self.max_length // 2 if self.stride is None else self.stride
        if self.max_length < 2:
            raise ValueError(f"max_length must be >= 2, got {self.max_length}")
        if not 1 <= stride <= self.max_length - 1:
            raise ValueError(f"stride must be in 1..max_length-1 = {self.max_length - 1}, got {stride}")
        return stride


@dataclass(frozen=True)
class Windows:
    """One row per window: document, token span [start, end), first scored target."""

    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    score_from: np.ndarray

    @property
    def n_scored(self) -> np.ndarray:
        return self.end - self.score_from

    def __len__(self) -> int:
        return len(self.doc)


def plan_windows(doc_lengths: np.ndarray, spec: WindowSpec, first_target: np.ndarray | None = None) -> Windows:
    """Cut documents of the given token lengths into windows.

    `first_target[d]` is document d's first scored position (default 1: the first token has
    no context; 2 after a BOS the tokenizer added, whose successor the authors never scored).
    Documents with no position at or after it get no window.
    """
    stride = spec.resolved_stride()
    length = spec.max_length
    lengths = np.asarray(doc_lengths).tolist()
    firsts = [1] * len(lengths) if first_target is None else np.asarray(first_target).tolist()
    rows: list[tuple[int, int, int, int]] = []
    for d, (n, first) in enumerate(zip(lengths, firsts, strict=True)):
        end = min(length, n)
        if end <= first:
            continue
        rows.append((d, 0, end, first))
        count = 1
        while end < n and (spec.max_windows_per_doc is None or count < spec.max_windows_per_doc):
            new_end = min(end + stride, n)
            rows.append((d, max(0, new_end - length), new_end, end))
            end = new_end
            count += 1
    arr = np.array(rows, dtype=np.int64).reshape(-1, 4)
    return Windows(doc=arr[:, 0], start=arr[:, 1], end=arr[:, 2], score_from=arr[:, 3])

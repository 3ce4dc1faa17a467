"""Canonical params: Snakemake reruns a job whenever the repr of one of its params changes.

So params must not depend on how the YAML was written: key order, 1 vs 1.0, tuples vs lists.
Lists keep their order (where order means something, pass a list).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any


def canonical(value: Any) -> Any:
    """A params value whose repr depends only on its content: keys sorted, 1.0 -> 1, tuples -> lists."""
    if isinstance(value, Mapping):
        return {str(k): canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def short_hash(value: Any, n: int = 8) -> str:
    """A short hex digest of a value's canonical form (the same however its mappings were ordered)."""
    return hashlib.sha256(repr(canonical(value)).encode()).hexdigest()[:n]

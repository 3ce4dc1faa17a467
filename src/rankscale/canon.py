"""Canonical params: Snakemake reruns a job whenever the repr of one of its params changes.

So params must not depend on how the YAML was written: key order, 1 vs 1.0, tuples vs lists.
Lists keep their order (where order means something, pass a list). Also the file-name keys made from
names and hub ids (`slug`, `text_key`).
"""

from __future__ import annotations

import hashlib
import re
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


KEY_CHARS = 12  # hex digits of a file key (rankscale.layout): collisions need ~16 million files of one name


def keyed_name(stem: str) -> str:
    """The name in a keyed file's stem `<name>-<key>` (rankscale.layout): `humaneval-0123456789ab` -> `humaneval`."""
    return re.sub(rf"-[0-9a-f]{{{KEY_CHARS}}}$", "", stem)


def slug(text: str) -> str:
    """A file-name-safe key: 'EleutherAI/pythia-70m' -> 'EleutherAI--pythia-70m'."""
    return re.sub(r"[^A-Za-z0-9._@-]+", "-", text.replace("/", "--")).strip("-")


def text_key(text: str) -> str:
    """`slug(text)`, plus a hash of `text` where the slug loses information.

    'ckpt v1' and 'ckpt-v1' would both slug to 'ckpt-v1' (and 'a/b', 'a--b' to 'a--b'). Hub
    ids never hold such characters, so their keys stay plain slugs.
    """
    key = slug(text)
    if not re.fullmatch(r"[A-Za-z0-9._@/-]+", text) or "--" in text:
        key += "-" + short_hash(text)
    return key

"""Text-disjointness: no span of evaluated text may appear verbatim in a model's training text.

The ladder's training corpus and the evaluated datasets can share text without sharing a
document (CPython's documentation topics quote each other; the standard library carries them as
string literals), so the training text is filtered by content: every stretch of a training
document that contains a `SPAN`-character substring of an evaluated document is cut out, and the
pieces around it become documents of their own (so nothing joins across a cut).
"""

from __future__ import annotations

from collections.abc import Iterable

from rankscale.corpus import Document

SPAN = 100  # characters: shorter common strings are idiom, not copied text


def span_index(texts: Iterable[str], span: int = SPAN) -> set[str]:
    """Every `span`-character substring of the texts."""
    index: set[str] = set()
    for text in texts:
        index.update(text[i : i + span] for i in range(len(text) - span + 1))
    return index


def shared_stretches(text: str, index: set[str], span: int = SPAN) -> list[tuple[int, int]]:
    """Merged [start, end) character ranges of `text` covered by substrings found in `index`."""
    stretches: list[tuple[int, int]] = []
    for i in range(len(text) - span + 1):
        if text[i : i + span] in index:
            if stretches and i <= stretches[-1][1]:
                stretches[-1] = (stretches[-1][0], i + span)
            else:
                stretches.append((i, i + span))
    return stretches


def without_shared_text(docs: Iterable[Document], index: set[str], span: int = SPAN) -> tuple[list[Document], int]:
    """(documents with every shared stretch cut out, characters removed); pieces shorter than `span` are dropped."""
    out: list[Document] = []
    removed = 0
    for doc in docs:
        stretches = shared_stretches(doc.text, index, span)
        if not stretches:
            out.append(doc)
            continue
        edges = [0, *(e for s in stretches for e in s), len(doc.text)]
        pieces = [doc.text[a:b] for a, b in zip(edges[::2], edges[1::2], strict=True)]
        removed += len(doc.text) - sum(len(p) for p in pieces)
        for j, piece in enumerate(p for p in pieces if len(p) >= span):
            out.append(Document(f"{doc.id}#{j}", piece))
        removed += sum(len(p) for p in pieces if len(p) < span)
    return out, removed


def disjoint_training_documents(
    training: Iterable[Document], evaluated: Iterable[Document], span: int = SPAN
) -> tuple[list[Document], dict[str, int]]:
    """The training documents with every stretch they share with an evaluated document cut out."""
    training = list(training)
    before = sum(len(d.text) for d in training)
    docs, removed = without_shared_text(training, span_index((d.text for d in evaluated), span), span)
    return docs, {"documents": len(docs), "characters": before - removed, "characters_removed": removed}

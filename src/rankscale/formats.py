"""The format versions of the expensive outputs, with the digest of the code each was reviewed at.

- `RANK_FORMAT`: what a rank array holds (and the corpora and token windows it scores). It is part
  of every rank array's identity, and of the corpus and tokenization params.
- `TRAIN_FORMAT`: what a ladder checkpoint is (its training text, tokenizer and training). It is
  part of the ladder directory's key, so a bump trains a new ladder beside the old one.

Bump a version when a change alters what its outputs hold (a different rank, log-prob, window,
token or weight): the next run recomputes them. A change that does not (a refactor, a faster
kernel with identical results, a message) keeps the version: pin the new `code` digest that
tests/test_formats.py prints. Either way the change is a decision, never an accident: reformatting
and comments do not change a digest; everything else in the code behind an output does.
"""

from rankscale.fingerprint import FormatVersion

RANK_FORMAT = FormatVersion(version=1, code="b23033d9931c0f82", scripts=("corpus", "tokenize", "extract"))
TRAIN_FORMAT = FormatVersion(
    version=1, code="82d58c94eca8693d", scripts=("ladder_corpus", "ladder_tokenizer", "ladder_train")
)

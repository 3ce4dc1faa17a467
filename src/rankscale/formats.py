"""The format versions of the expensive outputs, with the digest of the code each was reviewed at.

- `CORPUS_FORMAT`: what a corpus holds (the documents a dataset entry yields). It is part of the corpus
  params: a bump recomputes the corpora and everything made from them (token files, rank arrays, and
  the offline ladder, whose training text is cut free of the evaluated corpora).
- `RANK_FORMAT`: what a rank array holds (and the token windows it scores). It is part of every rank
  array's identity and of the tokenization params: a bump recomputes token files and rank arrays only.
- `SOURCE_FORMATS`: each dataset source's own module (`sources/<name>.py`, with the `Source` interface), which
  the corpus and training formats leave out: a new source adds its pin and moves no other; a bump recomputes the
  corpora of that source (its version is part of their params) and all made from them.
- `TRAIN_FORMAT`: what a ladder checkpoint is (its training text, tokenizer and training). It is
  part of the ladder directory's key, so a bump trains a new ladder beside the old one.

Bump a version when a change alters what its outputs hold (a different rank, log-prob, window,
token or weight): the next run recomputes them. A change that does not (a refactor, a faster
kernel with identical results, a message) keeps the version: pin the new `code` digest that
tests/test_formats.py prints. Either way the change is a decision, never an accident: reformatting
and comments do not change a digest; everything else in the code behind an output does.
"""

from rankscale.fingerprint import SOURCES_APART, FormatVersion
from rankscale.registry import Registry

# (a local file whose texts are all empty is refused before any job, corpora and ladders unchanged: same versions)
# (the sources' shared steps moved to rankscale.documents, and the sources left out, each pinned below: same version)
CORPUS_FORMAT = FormatVersion(version=1, code="0cd925b52eb3bd7f", scripts=("corpus",), apart=SOURCES_APART)
# each dataset source's own module: a bump (`version=2`) recomputes the corpora of that source alone, and all made
# from them; a new source registers its pin here (CONTRIBUTING.md, "A new dataset source")
SOURCE_FORMATS: Registry[FormatVersion] = Registry(
    "source format",
    (
        FormatVersion.source("packaged", version=1, code="0bc2db188e87013a"),
        FormatVersion.source("local", version=1, code="a28b4bd305777576"),
        FormatVersion.source("hub", version=1, code="9a14b62987d5ba01"),
    ),
    lambda f: f.modules[0],
)
# version 2: each document begins with the start tokens its tokenizer adds (a BOS), never with an appended EOS
# (a GPU's float32 head from the tensor cores, the float32 head up to its sums' order; the summaries' documents: same version)
# (the fused rank kernel: the float32 head up to its sums' order, at near ties only: same version)
# (the token file's and rank array's sidecars record a hub tokenizer's commit, and extraction checks it: same version)
# (the layout spells a run directory's files once, RunFiles: no rank array changes, same version)
# (what extraction runs alone: TOKENIZER_COMMIT in identity, not token_kinds; ConfigError in errors, not config; the
# content digests in content_digest, not beside the code digests: no rank array changes, same version)
# (the calibration fields mass_above, top1_logprob and entropy join the arrays; rank and log-prob keep their bits,
#  and an array without the fields keeps serving: same version; `extraction.refresh_calibration` adds them)
# (the sources left out, as the corpus format's: same version)
RANK_FORMAT = FormatVersion(version=2, code="af260210db76a95f", scripts=("tokenize", "extract"))
TRAIN_FORMAT = FormatVersion(
    version=1, code="b867056e48cc1a89", scripts=("ladder_corpus", "ladder_tokenizer", "ladder_train"), apart=SOURCES_APART
)

"""The format versions of the expensive outputs, with the digest of the code each was reviewed at.

- `CORPUS_FORMAT`: what a corpus holds (the documents a dataset entry yields). It is part of the corpus
  params: a bump recomputes the corpora and everything made from them (token files, rank arrays, and
  the offline ladder, whose training text is cut free of the evaluated corpora).
- `RANK_FORMAT`: what a rank array holds (and the token windows it scores). It is part of every rank
  array's identity and of the tokenization params: a bump recomputes token files and rank arrays only.
- `TRAIN_FORMAT`: what a ladder checkpoint is (its training text, tokenizer and training). It is
  part of the ladder directory's key, so a bump trains a new ladder beside the old one.

Bump a version when a change alters what its outputs hold (a different rank, log-prob, window,
token or weight): the next run recomputes them. A change that does not (a refactor, a faster
kernel with identical results, a message) keeps the version: pin the new `code` digest that
tests/test_formats.py prints. Either way the change is a decision, never an accident: reformatting
and comments do not change a digest; everything else in the code behind an output does.
"""

from rankscale.fingerprint import FormatVersion

# (a local file whose texts are all empty is refused before any job, corpora and ladders unchanged: same versions)
CORPUS_FORMAT = FormatVersion(version=1, code="08dbcb9403eb5bee", scripts=("corpus",))
# version 2: each document begins with the start tokens its tokenizer adds (a BOS), never with an appended EOS
# (a GPU's float32 head from the tensor cores, the float32 head up to its sums' order; the summaries' documents: same version)
# (the fused rank kernel: the float32 head up to its sums' order, at near ties only: same version)
# (the token file's and rank array's sidecars record a hub tokenizer's commit, and extraction checks it: same version)
# (the layout spells a run directory's files once, RunFiles: no rank array changes, same version)
# (the calibration fields mass_above, top1_logprob and entropy join the arrays; rank and log-prob keep their bits,
#  and an array without the fields keeps serving: same version; `extraction.refresh_calibration` adds them)
RANK_FORMAT = FormatVersion(version=2, code="cbcb070e195edf36", scripts=("tokenize", "extract"))
TRAIN_FORMAT = FormatVersion(
    version=1, code="dc6812f185784b5a", scripts=("ladder_corpus", "ladder_tokenizer", "ladder_train")
)

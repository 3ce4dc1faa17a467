"""rankscale: how language models rank the correct next token, and how that scales with size.

Implements the measurements of "Relative-Based Scaling Law for Neural Language Models"
(arXiv 2510.20387): per-token ranks and log-probabilities, RBP_k, cross-entropy,
non-embedding parameter counts, power-law, lognormal and emergence analyses.
"""

__version__ = "0.1.0"

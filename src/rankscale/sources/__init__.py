"""Dataset sources: where a dataset entry's documents come from (`source:` in the config).

To add a source: write `rankscale/sources/<name>.py` with a module-level `SOURCE = Source(...)`
(its `name`, documents, plan-time check, provenance), register it in `SOURCES` below (`SOURCES.register`:
a name registered already is refused), pin its code in `rankscale.formats.SOURCE_FORMATS` (tests/test_formats.py
prints the digest), and give it its keys in
`workflow/schemas/config.schema.yaml` as `$defs/<name>_dataset`: the schema's `source` names and per-source branches
come from those definitions (rankscale.config), and tests/test_config.py checks that they name exactly
the sources of `SOURCES`. The shared steps (held-out split, seeded shuffle, size limits) are applied by
`rankscale.documents`, the same for every source. This file only lists the sources: the corpus format leaves it and
the sources out of its digest, and pins each source's module on its own.
"""

from __future__ import annotations

from rankscale.registry import Registry
from rankscale.sources import hub, local, packaged
from rankscale.sources.base import Source

SOURCES: Registry[Source] = Registry("dataset source", (packaged.SOURCE, local.SOURCE, hub.SOURCE))

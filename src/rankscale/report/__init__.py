"""The Snakemake report a reader opens (`snakemake --report results/<run>/report.html`).

The sections figures and tables are grouped by live below it, in `rankscale.sections`, for tables/ and plots/
to name without importing the report (which reads the tables).

`pages`: each table as a self-contained, sortable and searchable HTML page (the CSV stays the source);
`landing`: the landing page, what the run found and the manifest of what produced it; `captions`: each table's and
figure's caption as the report's reStructuredText (escaped). Kept free of imports here,
so a rule script that needs one of them does not import (and hash: `rankscale.fingerprint`) the others.
"""

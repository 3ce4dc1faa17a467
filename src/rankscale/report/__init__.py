"""The Snakemake report a reader opens (`snakemake --report results/<run>/report.html`).

`sections`: the analyses figures and tables are grouped by, in paper order (the report's subcategories);
`pages`: each table as a self-contained, sortable and searchable HTML page (the CSV stays the source);
`landing`: the landing page, what the run found and the manifest of what produced it. Kept free of imports here,
so a rule script that needs one of them does not import (and hash: `rankscale.fingerprint`) the others.
"""

"""Rule download: one hub repository at one revision -> the Hugging Face cache, and a record of the commit."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from rankscale.atomic import write_json
from rankscale.downloads import HubDownload, fetch
from rankscale.logs import setup_logging

log = setup_logging(snakemake.log[0])
download = HubDownload(**snakemake.params.spec)
models = snakemake.params.models
record = fetch(download, f"model{'s' if len(models) > 1 else ''} {', '.join(map(repr, models))}")
write_json(snakemake.output[0], record)
log.info("%s at %s: commit %s, %d files, in %s", download.repo, download.revision, record["commit"],
         len(record["files"]), record["cache"])  # fmt: skip

"""Rule gguf_convert: a GGUF file -> a float32 safetensors model directory with its tokenizer (once per file)."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


from pathlib import Path

from rankscale.gguf import GgufSource, convert
from rankscale.logs import setup_logging

log = setup_logging(snakemake.log[0])
source = GgufSource(Path(snakemake.params.file), snakemake.wildcards.digest)
info = convert(source, snakemake.output[0])
log.info("%s (%s, %s): %d parameters dequantized to float32 in %s", source.file, info["quantization"],
         info["architecture"], info["parameters"], snakemake.output[0])  # fmt: skip

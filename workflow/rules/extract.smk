# Rank extraction: the one expensive, model-dependent step. Its `identity` params hold exactly
# what a rank array depends on (rankscale.identity.RankIdentity); runtime settings (device,
# batch size, ...) travel in the derived `job` params, so changing them never reruns a job.
# A GGUF model is first converted, once, into a float32 model directory that every extraction loads. A hub
# model is first downloaded, once per revision, by a local rule (on the host that runs snakemake, where the
# network is): extraction jobs run offline (rankscale.downloads).


rule extract:
    input:
        unpack(extract_inputs),
    output:
        ranks="results/ranks/{model}/{ranks}.npz",
        meta="results/ranks/{model}/{ranks}.json",
    params:
        identity=lambda wc: PLAN[wc.model].identity(dataset(wc)).params(),
        dataset=lambda wc, output: dataset(wc),
        job=lambda wc, output: PLAN[wc.model].job(),
    threads: lambda wc: runtime_setting(wc.model, "threads")
    resources:
        gpu=lambda wc: runtime_setting(wc.model, "gpus"),
        mem_mb=lambda wc: runtime_setting(wc.model, "mem_mb"),
        runtime=lambda wc: runtime_setting(wc.model, "runtime"),
    log:
        "logs/extract/{model}/{ranks}.log",
    benchmark:
        "results/benchmarks/extract/{model}/{ranks}.tsv"
    conda:
        "../../envs/ml.yaml"
    script:
        "../scripts/extract.py"


rule download:
    output:
        "resources/downloads/{download}.json",
    params:
        spec=lambda wc: DOWNLOADS[wc.download].params(),
        models=lambda wc, output: download_users(wc.download),  # for messages (derived: adding one reruns nothing)
    log:
        "logs/download/{download}.log",
    conda:
        "../../envs/ml.yaml"
    script:
        "../scripts/download.py"


rule gguf_convert:
    output:
        directory("resources/gguf/{digest}"),
    params:
        file=lambda wc, output: str(GGUF[wc.digest].file),  # derived: the digest in the path is the identity
    log:
        "logs/gguf/{digest}.log",
    benchmark:
        "results/benchmarks/gguf_convert/{digest}.tsv"
    conda:
        "../../envs/ml.yaml"
    script:
        "../scripts/gguf_convert.py"

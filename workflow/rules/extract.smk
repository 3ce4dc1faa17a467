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
        ranks=f"{Layout.RANKS}.npz",
        meta=f"{Layout.RANKS}.json",
    params:
        identity=lambda wc: PLAN[wc.model].extract_params(dataset(wc), fill(Layout.RANKS, **wc) + ".json"),
        dataset=lambda wc, output: dataset(wc),
        job=lambda wc, output: PLAN[wc.model].job(),
    threads: lambda wc: runtime_setting(wc.model, "threads")
    resources:
        gpu=lambda wc: runtime_setting(wc.model, "gpus"),
        mem_mb=lambda wc: runtime_setting(wc.model, "mem_mb"),
        runtime=lambda wc: runtime_setting(wc.model, "runtime"),
    log:
        Layout.log("extract", "{model}/{ranks}"),
    benchmark:
        Layout.EXTRACT_BENCHMARK
    conda:
        "../envs/ml.yaml"
    script:
        "../scripts/extract.py"


rule download:
    localrule: True
    output:
        Layout.DOWNLOAD,
    params:
        spec=lambda wc: DOWNLOADS[wc.download].params(),
        models=lambda wc, output: download_users(wc.download),  # for messages (derived: adding one reruns nothing)
    log:
        Layout.log("download", "{download}"),
    conda:
        "../envs/ml.yaml"
    script:
        "../scripts/download.py"


rule gguf_convert:
    output:
        directory(Layout.GGUF),
    params:
        file=lambda wc, output: str(GGUF[wc.digest].file),  # derived: the digest in the path is the identity
    log:
        Layout.log("gguf", "{digest}"),
    benchmark:
        Layout.GGUF_BENCHMARK
    conda:
        "../envs/ml.yaml"
    script:
        "../scripts/gguf_convert.py"

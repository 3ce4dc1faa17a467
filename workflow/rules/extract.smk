# Rank extraction: the one expensive, model-dependent step. Its params hold exactly what a
# rank array depends on (DESIGN.md §2); runtime settings (device, batch size) are read from
# the config inside the script so changing them never invalidates finished arrays.


rule extract:
    input:
        unpack(extract_inputs),
    output:
        ranks="results/ranks/{model}/{dataset}.npz",
        meta="results/ranks/{model}/{dataset}.json",
    params:
        identity=lambda wc: PLAN[wc.model].identity_params(wc.dataset),
    threads: lambda wc: runtime_setting(wc.model, "threads", 1)
    resources:
        gpu=lambda wc: runtime_setting(wc.model, "gpus", 0),
        mem_mb=lambda wc: runtime_setting(wc.model, "mem_mb", 4000),
        runtime=lambda wc: runtime_setting(wc.model, "runtime", 60),
    log:
        "logs/extract/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/extract/{model}/{dataset}.tsv"
    conda:
        "../../envs/ml.yaml"
    script:
        "../scripts/extract.py"

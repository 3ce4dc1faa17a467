# The offline model ladder: a BPE tokenizer and GPT-NeoX models trained here, under
# resources/ladder/<key>/ where the key hashes what the training text and tokenizer depend on
# (rankscale.plan.ladder_dir), so configurations in one clone never retrain each other's ladder.

rule ladder_corpus:
    localrule: True
    input:
        evaluated=[LAYOUT.corpus(d) for d in DATASETS],  # text the ladder must not see
    output:
        LADDER_FILES.corpus,
    params:
        specs=[corpus_params(spec) for spec in LADDER["corpus"]] if LADDER else [],  # in order: the text's
        names=lambda wc, output: [f"ladder.corpus[{i}]" for i in range(len(LADDER["corpus"]))] if LADDER else [],
    log:
        LADDER_FILES.log("corpus"),
    conda:
        "../envs/ml.yaml"
    script:
        "../scripts/ladder_corpus.py"


rule ladder_tokenizer:
    input:
        LADDER_FILES.corpus,
    output:
        tokenizer=directory(LADDER_FILES.tokenizer),
        counts=LADDER_FILES.counts,  # the text's length in tokens: seq_len is checked at plan time
        tokens=LADDER_FILES.tokens,  # the text tokenized once for every training job
    params:
        vocab_size=LADDER["tokenizer"]["vocab_size"] if LADDER else 0,
    log:
        LADDER_FILES.log("tokenizer"),
    conda:
        "../envs/ml.yaml"
    script:
        "../scripts/ladder_tokenizer.py"


rule ladder_train:
    input:
        tokens=LADDER_FILES.tokens,
        tokenizer=LADDER_FILES.tokenizer,
        final=run_final_model,
    output:
        directory(LADDER_FILES.model()),
    params:
        # what the model's weights depend on (rankscale.plan.training_params): its size, the training every run
        # shares with its seed, and for a checkpoint the tokens it stops at; not the list of checkpoints or
        # seeds (adding one trains that one alone)
        size=lambda wc: training_params(config, PLAN[wc.model])["size"],
        train=lambda wc: training_params(config, PLAN[wc.model])["train"],
        stop_at=lambda wc: PLAN[wc.model].checkpoint,
        # derived (they take `output`): the run's checkpoints, whose states are saved on the way, and where
        save_at=lambda wc, output: run_checkpoints(config),
        states=lambda wc, output: LADDER_FILES.states,
    # a run's final models first: they save the states their checkpoints are then exported from
    priority: lambda wc: 1 if PLAN[wc.model].final else 0
    threads: LADDER["threads"] if LADDER else 1
    log:
        LADDER_FILES.log("train/{model}"),
    benchmark:
        LADDER_FILES.benchmark()
    conda:
        "../envs/ml.yaml"
    script:
        "../scripts/ladder_train.py"

# The offline model ladder: a BPE tokenizer and GPT-NeoX models trained here, under
# resources/ladder/<key>/ where the key hashes what the training text and tokenizer depend on
# (rankscale.plan.ladder_dir), so configurations in one clone never retrain each other's ladder.

rule ladder_corpus:
    input:
        evaluated=[LAYOUT.corpus(d) for d in DATASETS],  # text the ladder must not see
    output:
        f"{LADDER_DIR}/train_corpus.jsonl",
    params:
        specs=[corpus_params(spec) for spec in LADDER["corpus"]] if LADDER else [],  # in order: the text's
        names=lambda wc, output: [f"ladder.corpus[{i}]" for i in range(len(LADDER["corpus"]))] if LADDER else [],
    log:
        f"{LADDER_LOGS}/corpus.log",
    conda:
        "../../envs/ml.yaml"
    script:
        "../scripts/ladder_corpus.py"


rule ladder_tokenizer:
    input:
        f"{LADDER_DIR}/train_corpus.jsonl",
    output:
        tokenizer=directory(f"{LADDER_DIR}/tokenizer"),
        counts=f"{LADDER_DIR}/{TRAIN_TOKENS}",  # the text's length in tokens: seq_len is checked at plan time
        tokens=f"{LADDER_DIR}/train_tokens.npz",  # the text tokenized once for every training job
    params:
        vocab_size=LADDER["tokenizer"]["vocab_size"] if LADDER else 0,
    log:
        f"{LADDER_LOGS}/tokenizer.log",
    conda:
        "../../envs/ml.yaml"
    script:
        "../scripts/ladder_tokenizer.py"


rule ladder_train:
    input:
        tokens=f"{LADDER_DIR}/train_tokens.npz",
        tokenizer=f"{LADDER_DIR}/tokenizer",
        final=run_final_model,
    output:
        directory(f"{LADDER_DIR}/models/{{model}}"),
    params:
        # what the model's weights depend on (rankscale.plan.training_params): its size, the training every run
        # shares with its seed, and for a checkpoint the tokens it stops at; not the list of checkpoints or
        # seeds (adding one trains that one alone)
        size=lambda wc: training_params(config, PLAN[wc.model])["size"],
        train=lambda wc: training_params(config, PLAN[wc.model])["train"],
        stop_at=lambda wc: PLAN[wc.model].checkpoint,
        # derived (they take `output`): the run's checkpoints, whose states are saved on the way, and where
        save_at=lambda wc, output: run_checkpoints(config),
        states=lambda wc, output: f"{LADDER_DIR}/states",
    # a run's final models first: they save the states their checkpoints are then exported from
    priority: lambda wc: 1 if PLAN[wc.model].final else 0
    threads: LADDER["threads"] if LADDER else 1
    log:
        f"{LADDER_LOGS}/train/{{model}}.log",
    benchmark:
        f"{LADDER_LOGS}/benchmarks/{{model}}.tsv"
    conda:
        "../../envs/ml.yaml"
    script:
        "../scripts/ladder_train.py"

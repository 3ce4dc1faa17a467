# The offline model ladder: a BPE tokenizer and GPT-NeoX models trained here, under
# resources/ladder/<key>/ where the key hashes what the training text and tokenizer depend on
# (rankscale.plan.ladder_dir), so configurations in one clone never retrain each other's ladder.

rule ladder_corpus:
    input:
        evaluated=expand("results/corpus/{dataset}.jsonl", dataset=DATASETS),  # text the ladder must not see
    output:
        f"{LADDER_DIR}/train_corpus.jsonl",
    params:
        specs=[corpus_params(spec) for spec in LADDER["corpus"].values()] if LADDER else [],  # a list: the order is the text's
        names=lambda wc, output: list(LADDER["corpus"]) if LADDER else [],  # for messages only
    log:
        "logs/ladder/corpus.log",
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
        "logs/ladder/tokenizer.log",
    conda:
        "../../envs/ml.yaml"
    script:
        "../scripts/ladder_tokenizer.py"


rule ladder_train:
    input:
        tokens=f"{LADDER_DIR}/train_tokens.npz",
        tokenizer=f"{LADDER_DIR}/tokenizer",
    output:
        directory(f"{LADDER_DIR}/models/{{model}}"),
    params:
        size=lambda wc: canonical(LADDER_SIZES[PLAN[wc.model].size]),
        # what every size's run shares; not the list of checkpoints (adding one trains that one alone)
        train=canonical({k: v for k, v in LADDER["train"].items() if k != "checkpoints"}) if LADDER else {},
        stop_at=lambda wc: PLAN[wc.model].checkpoint,  # a checkpoint: the run stopped at these tokens
    threads: LADDER["threads"] if LADDER else 1
    log:
        "logs/ladder/train/{model}.log",
    benchmark:
        "results/benchmarks/ladder_train/{model}.tsv"
    conda:
        "../../envs/ml.yaml"
    script:
        "../scripts/ladder_train.py"

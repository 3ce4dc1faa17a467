# Corpus text -> one JSONL of documents per dataset; -> token ids per tokenizer x dataset; each tokenizer's
# token table (what each token id is: the `kind` stratum; its text's UTF-8 byte length: bits per byte).
# Corpus and token files are named `<dataset>-<key>`, the key a hash of what they hold (rankscale.layout).


rule corpus:
    output:
        corpus="results/corpus/{corpus}.jsonl",
        meta="results/corpus/{corpus}.json",
    params:
        spec=lambda wc: corpus_spec(config, dataset(wc)),
        dataset=lambda wc, output: dataset(wc),  # for messages
    log:
        "logs/corpus/{corpus}.log",
    conda:
        "../../envs/ml.yaml"
    script:
        "../scripts/corpus.py"


rule tokenize:
    input:
        corpus=lambda wc: LAYOUT.corpus(dataset(wc)),
        corpus_meta=lambda wc: LAYOUT.corpus(dataset(wc), "json"),
        tokenizer=tokenizer_input,
    output:
        tokens="results/tokens/{tok}/{tokens}.npz",
        meta="results/tokens/{tok}/{tokens}.npz.json",
    params:
        source=lambda wc: tokenize_source(PLAN, wc.tok),
        models=lambda wc, output: tokenizer_users(wc.tok),
        dataset=lambda wc, output: dataset(wc),
        add_special_tokens=config["tokenization"]["add_special_tokens"],
        # the per-tokenizer cap it was (datasets now cap their corpus: `max_bytes`), always None: kept so that
        # no token file is rewritten, since a changed param would rerun every extraction downstream
        max_scored_tokens=None,
    log:
        "logs/tokenize/{tok}/{tokens}.log",
    conda:
        "../../envs/ml.yaml"
    script:
        "../scripts/tokenize.py"


rule token_kinds:
    input:
        tokenizer=tokenizer_input,
    output:
        table="results/token_kinds/{tok}.npz",
        meta="results/token_kinds/{tok}.npz.json",
    params:
        source=lambda wc: tokenizer_params(TOKENIZERS[wc.tok], wc.tok),
        code=CODE["token_kinds"],
    log:
        "logs/token_kinds/{tok}.log",
    conda:
        "../../envs/ml.yaml"
    script:
        "../scripts/token_kinds.py"

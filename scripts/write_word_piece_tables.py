"""Write the Unicode tables of ``mcp_aggregator.search.word_piece``
(``src/mcp_aggregator/search/model/word_piece_tables.json``) from the ``tokenizers`` library.

Run: ``.venv/bin/python scripts/write_word_piece_tables.py [--tokenizer PATH]``. Every code
point goes through the library's BERT normaliser and pre-tokeniser, so the tables hold what
the library does (its Rust crates' Unicode versions), not what this Python's ``unicodedata``
says: the characters removed, the ones set apart with a space on each side (CJK), every other
character the normaliser changes, the punctuation the pre-tokeniser splits off, and the
characters whose marks canonical ordering may move past their neighbours' (which the library
itself normalises).
``tests/search/test_word_piece.py`` checks the file against the library again.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tokenizers import Tokenizer, normalizers

from mcp_aggregator.search.onnx_embedder import TOKENIZER_PATH
from mcp_aggregator.search.word_piece import TABLES

SURROGATES = range(0xD800, 0xE000)
LOW, HIGH = "\u0334", "\u0345"
"""Combining classes 1 and 240 (Unicode 1.1, in every table): a character of any other
nonzero class is moved past one of them by canonical ordering."""


def _reorders(nfd: normalizers.Normalizer, bert: normalizers.Normalizer, char: str) -> bool:
    """Whether ``char`` decomposes into a character that canonical ordering moves (a nonzero
    combining class in the library's tables) and that the BERT normaliser keeps."""
    for part in nfd.normalize_str(char):
        moved = (
            nfd.normalize_str(f"a{part}{LOW}") != f"a{part}{LOW}"
            or nfd.normalize_str(f"a{HIGH}{part}") != f"a{HIGH}{part}"
        )
        if moved and bert.normalize_str(part) != "":
            return True
    return False


def _ranges(code_points: list[int]) -> list[list[int]]:
    ranges: list[list[int]] = []
    for cp in code_points:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return ranges


def tables(tokenizer: Tokenizer) -> dict[str, object]:
    normalizer, pre_tokenizer = tokenizer.normalizer, tokenizer.pre_tokenizer
    assert normalizer is not None and pre_tokenizer is not None
    removed: list[int] = []
    set_apart: list[int] = []
    mapped: dict[int, str] = {}
    punctuation: list[int] = []
    reordering: list[int] = []
    nfd = normalizers.NFD()
    for cp in range(0x110000):
        if cp in SURROGATES:
            continue
        char = chr(cp)
        out = normalizer.normalize_str(char)
        if out == "":
            removed.append(cp)
        elif char != " " and len(out) >= 3 and out[0] == out[-1] == " " and out[1:-1].strip():
            set_apart.append(cp)
            if out[1:-1] != char:
                mapped[cp] = out[1:-1]
        elif out != char:
            mapped[cp] = out
        words = [word for word, _ in pre_tokenizer.pre_tokenize_str(f"a{char}a")]
        if words == ["a", char, "a"]:
            punctuation.append(cp)
        if out and _reorders(nfd, normalizer, char):
            reordering.append(cp)
    # Strings, not a JSON object: an object of 14,000 members (11,172 of them the Hangul
    # syllables, each made two or three jamo) is 3 MB of RSS at every start, where a string
    # of the characters changed and one of what each becomes (in slots of the longest, padded
    # with NUL, which no output holds) are two objects.
    width = max(len(out) for out in mapped.values())
    return {
        "removed": _ranges(removed),
        "set_apart": _ranges(set_apart),
        "punctuation": _ranges(punctuation),
        "reordering": _ranges(reordering),
        "changed": "".join(chr(cp) for cp in mapped),
        "changed_into": "".join(out.ljust(width, "\0") for out in mapped.values()),
        "width": width,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", type=Path, default=TOKENIZER_PATH)
    args = parser.parse_args()
    written = json.dumps(tables(Tokenizer.from_file(str(args.tokenizer))), separators=(",", ":"))
    TABLES.write_text(written + "\n")
    print(f"wrote {TABLES}")


if __name__ == "__main__":
    main()

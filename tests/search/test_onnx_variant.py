"""The automatic choice of the embedding model variant, as a pure function of its trials."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_aggregator.search.onnx_variant import Trial, VariantChoice, pick, remember, remembered_choice

PACKAGED = Trial("packaged", 1.0, 10.0)


@pytest.mark.parametrize(
    ("trials", "expected"),
    [
        # a VNNI CPU: both accurate, int8 clearly fastest
        ([PACKAGED, Trial("int8", 0.995, 3.0), Trial("uint8", 0.996, 4.0)], "int8"),
        # AVX2 without VNNI: int8 saturates below the threshold
        ([PACKAGED, Trial("int8", 0.986, 3.0), Trial("uint8", 0.995, 3.5)], "uint8"),
        # equally fast (within 10%): the more accurate wins
        ([PACKAGED, Trial("int8", 0.993, 3.0), Trial("uint8", 0.996, 3.2)], "uint8"),
        # accurate but not fast enough to be worth its inexactness
        ([PACKAGED, Trial("int8", 0.995, 9.0), Trial("uint8", 0.996, 9.5)], "packaged"),
        # none accurate enough
        ([PACKAGED, Trial("int8", 0.98, 3.0), Trial("uint8", 0.985, 3.5)], "packaged"),
        # the variants could not be derived here
        ([PACKAGED], "packaged"),
    ],
)
def test_pick_takes_the_fastest_accurate_variant_else_the_packaged_model(trials: list[Trial], expected: str) -> None:
    assert pick(trials, min_cosine=0.99, min_speedup=1.25).variant == expected


def test_pick_names_why_each_variant_was_rejected() -> None:
    choice = pick([PACKAGED, Trial("int8", 0.98, 3.0), Trial("uint8", 0.995, 9.0)], min_cosine=0.99, min_speedup=1.25)
    assert choice.variant == "packaged"
    assert choice.reason == "int8: cosine 0.9800 < 0.99; uint8: 1.11x as fast < 1.25x"


def test_pick_needs_the_packaged_models_trial_as_reference() -> None:
    with pytest.raises(ValueError, match="packaged"):
        pick([Trial("int8", 0.99, 3.0)], min_cosine=0.99, min_speedup=1.25)


def test_a_remembered_choice_is_read_back_with_its_trials(tmp_path: Path) -> None:
    source = tmp_path / "pkg" / "model.onnx"
    choice = VariantChoice("uint8", "measured", (PACKAGED, Trial("uint8", 0.995, 3.0)))
    remember(tmp_path / "cache", "ab" * 32, "key1", choice)
    back = remembered_choice([tmp_path / "cache"], source, "ab" * 32, "key1")
    assert back == VariantChoice("uint8", "remembered: measured", choice.trials)
    assert remembered_choice([tmp_path / "cache"], source, "ab" * 32, "key2") is None


def test_a_damaged_choice_file_is_measured_again(tmp_path: Path) -> None:
    remember(tmp_path, "ab" * 32, "key1", VariantChoice("int8", "measured"))
    (path,) = tmp_path.glob("*-choice-key1.json")
    path.write_text('{"format": 1, "variant": "fp16"}')
    assert remembered_choice([tmp_path], tmp_path / "pkg" / "model.onnx", "ab" * 32, "key1") is None

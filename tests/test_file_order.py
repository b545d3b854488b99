"""The suite's files run longest first, each file's tests together and in their own order."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO
from tests.file_order import SECONDS_FILE, longest_first, ordered, read_seconds


@dataclass(frozen=True)
class FakeItem:
    nodeid: str


def test_files_are_taken_longest_first_and_unmeasured_ones_count_as_the_median() -> None:
    seconds = {"a.py": 1.0, "b.py": 60.0, "c.py": 5.0}
    assert longest_first(["a.py", "b.py", "c.py", "new.py"], seconds) == ["b.py", "c.py", "new.py", "a.py"]


def test_equal_files_keep_their_collection_order() -> None:
    assert longest_first(["x.py", "y.py", "z.py"], {}) == ["x.py", "y.py", "z.py"]


def test_a_files_tests_stay_together_and_in_their_own_order() -> None:
    items = [FakeItem(n) for n in ("a.py::t1", "b.py::t1", "a.py::t2", "b.py::C::t2", "a.py::t3")]
    result = [item.nodeid for item in ordered(items, {"a.py": 1.0, "b.py": 2.0})]
    assert result == ["b.py::t1", "b.py::C::t2", "a.py::t1", "a.py::t2", "a.py::t3"]


def test_missing_seconds_file_means_collection_order(tmp_path: Path) -> None:
    assert read_seconds(tmp_path / "none.json") == {}
    items = [FakeItem("b.py::t"), FakeItem("a.py::t")]
    assert [i.nodeid for i in ordered(items, {})] == ["b.py::t", "a.py::t"]


def test_the_committed_seconds_name_files_that_exist() -> None:
    seconds = json.loads(SECONDS_FILE.read_text())
    root = SECONDS_FILE.parent.parent
    missing = [name for name in seconds if not (root / name).is_file()]
    assert seconds, "tests/file_seconds.json is empty"
    assert not missing, (
        f"tests/file_seconds.json names files that are gone (run scripts/suite_file_seconds.py): {missing}"
    )


def test_the_seconds_are_summed_per_file_from_a_runs_junit_xml(tmp_path: Path) -> None:
    junit = tmp_path / "run.xml"
    junit.write_text(
        "<testsuites><testsuite>"
        '<testcase classname="tests.test_file_order" name="a" time="1.5"/>'
        '<testcase classname="tests.test_file_order" name="b" time="2.0"/>'
        '<testcase classname="tests.test_cli.SomeClass" name="c" time="4.0"/>'
        "</testsuite></testsuites>"
    )
    out = tmp_path / "seconds.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "suite_file_seconds.py"), str(junit), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == {"tests/test_cli.py": 4.0, "tests/test_file_order.py": 3.5}


def test_a_missing_junit_file_is_named(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "suite_file_seconds.py"), str(tmp_path / "none.xml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert f"no such file: {tmp_path / 'none.xml'}" in done.stderr

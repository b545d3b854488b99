"""Write tests/file_seconds.json from the junit XML of a whole test run.

    ./run-tests.sh --junitxml=/tmp/suite.xml
    .venv/bin/python scripts/suite_file_seconds.py /tmp/suite.xml

The seconds of a file are its tests' times summed (setup and teardown included, as pytest
reports them); tests/file_order.py runs the longest files first.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def file_seconds(junit: Path) -> dict[str, float]:
    """Seconds per test file, from pytest's junit XML (``classname`` is the module's dotted path)."""
    totals: dict[str, float] = defaultdict(float)
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        classname = case.get("classname", "")
        parts = classname.split(".")
        # A class inside a module adds one more part; the module is the longest prefix that is a file.
        for end in range(len(parts), 0, -1):
            candidate = "/".join(parts[:end]) + ".py"
            if (ROOT / candidate).is_file():
                totals[candidate] += float(case.get("time", "0"))
                break
    return {name: round(value, 1) for name, value in sorted(totals.items(), key=lambda kv: -kv[1])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("junit", type=Path, help="the junit XML of a whole run")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "file_seconds.json")
    args = parser.parse_args()
    if not args.junit.is_file():
        print(f"no such file: {args.junit}", file=sys.stderr)
        return 2
    seconds = file_seconds(args.junit)
    if not seconds:
        print(f"{args.junit}: no test cases of files under {ROOT}", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(seconds, indent=1) + "\n")
    print(f"{len(seconds)} files, {sum(seconds.values()):.0f} s in all -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

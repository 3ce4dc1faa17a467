"""Seconds per test file from a pytest JUnit XML report, largest first: where the suite's time goes."""

import sys
import xml.etree.ElementTree as ET
from collections import Counter

seconds: Counter[str] = Counter()
for case in ET.parse(sys.argv[1]).iter("testcase"):
    seconds[case.get("classname", "?").rsplit(".", 1)[-1]] += float(case.get("time", 0))
print(f".ci/run: test time per file ({sum(seconds.values()) / 60:.1f} min added up over the workers)")
for name, total in seconds.most_common():
    print(f"  {total:7.1f} s  {name}")

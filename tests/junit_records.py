"""The properties harness's pytest plugin gives each test in a JUnit report, under either family: a testcase's
own (xunit1, legacy) or the suite's named `<test id>::<property>` (xunit2, pytest's default)."""

import xml.etree.ElementTree as ET
from pathlib import Path


def _properties(element: ET.Element) -> list[ET.Element]:
    found = element.find("properties")
    return [] if found is None else list(found)


def recorded_properties(junit: Path) -> dict[str, dict[str, str]]:
    """{test name: {property: value}} for every testcase of the report."""
    root = ET.parse(junit).getroot()
    recorded = {case.get("name"): {} for case in root.iter("testcase")}
    for case in root.iter("testcase"):
        recorded[case.get("name")] |= {p.get("name"): p.get("value") for p in _properties(case)}
    for suite in root.iter("testsuite"):
        for p in _properties(suite):
            node, sep, name = p.get("name").rpartition("::")
            if sep:
                recorded.setdefault(node.rpartition("::")[2], {})[name] = p.get("value")
    return recorded

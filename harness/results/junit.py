"""`harness runs check --junit`: the gates' verdicts as JUnit XML for lab CI, one test case per gate and subset."""

import xml.etree.ElementTree as ET

from harness.results.gates import GateResult
from harness.results.runs import Run
from harness.results.verdicts import Part


def _cases(result: GateResult) -> list[tuple[str, GateResult | Part]]:
    """A gate over subsets gives a case per subset it judged or named (`accuracy.distance_far`), else one."""
    if result.parts:
        return [(f"{result.name}.{part.subset}", part) for part in result.parts]
    return [(result.name, result)]


def junit_xml(run: Run, results: list[GateResult]) -> str:
    """One test case per gate and subset, its figure and bound as properties; one not judged is skipped, with
    why (a skipped case never reads as passed)."""
    cases = [case for result in results for case in _cases(result)]
    suite = ET.Element(
        "testsuite",
        name=f"harness runs check {run.id}",
        tests=str(len(cases)),
        failures=str(sum(verdict.status == "failed" for _, verdict in cases)),
        skipped=str(sum(verdict.status == "not judged" for _, verdict in cases)),
    )
    for name, verdict in cases:
        case = ET.SubElement(suite, "testcase", classname=f"harness.gates.{run.board}.{run.model}", name=name)
        properties = ET.SubElement(case, "properties")
        for key in ("figure", "bound"):
            ET.SubElement(properties, "property", name=key, value=getattr(verdict, key))
        if verdict.status == "failed":
            ET.SubElement(case, "failure", message=verdict.detail).text = verdict.detail
        elif verdict.status == "not judged":
            ET.SubElement(case, "skipped", message=verdict.detail)
        ET.SubElement(case, "system-out").text = verdict.detail
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)

"""docs/lab-ci.md's pytest examples are tests: its ```python blocks, each a test file, run with harness's
plugin against the virtual board, and pass, with their runs in the JUnit report."""

import os
import re
from pathlib import Path

from tests.junit_records import recorded_properties

pytest_plugins = ("pytester",)

REPO = Path(__file__).resolve().parents[3]
PAGE = REPO / "docs" / "lab-ci.md"
BLOCK = re.compile(r"```python\n# tests/(test_\w+)\.py\n(.*?)```", re.DOTALL)


def test_the_pages_pytest_examples_pass(pytester, monkeypatch, tmp_path):
    blocks = BLOCK.findall(PAGE.read_text())
    assert len(blocks) == PAGE.read_text().count("```python") >= 2  # every Python block is a test file
    pytester.makepyfile(**dict(blocks))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    junit = tmp_path / "junit.xml"
    outcome = pytester.runpytest_subprocess(
        "-p", "harness.pytest_plugin", f"--junitxml={junit}", f"--harness-results={tmp_path / 'results'}"
    )
    outcome.assert_outcomes(passed=4)
    recorded = recorded_properties(junit)
    for name in ("test_far_subset", "test_dark_subset_on_the_whole_pool"):
        assert (tmp_path / "results" / recorded[name]["harness_run_id"] / "summary.json").is_file()
        assert recorded[name]["harness_board"] == "sim"
    assert "(device (sim), 95 % CI" in recorded["test_far_subset"]["harness_accuracy_distance_far"]

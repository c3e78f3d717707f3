"""harness's pytest plugin against the virtual board: a gate that passes, one that fails with its figure,
interval and n, and the runs' figures in the JUnit report. The plugin is loaded with `-p` and, as the
installed entry point would, from a stand-in distribution: both at once must register it once."""

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

REPO = Path(__file__).resolve().parents[3]

GATES = """
def test_far_accuracy_passes(harness_eval):
    run = harness_eval(subsets="distance_far", limit=4)
    assert run.agreement("distance_far") >= 0.99
    assert run.accuracy("distance_far") >= 0.1


def test_far_accuracy_fails(harness_eval):
    run = harness_eval(subsets="distance_far", limit=4)
    assert run.accuracy("distance_far") >= 0.99
"""


def entry_point_standin(folder: Path) -> Path:
    """A distribution declaring the plugin's pytest11 entry point, as pyproject.toml does."""
    info = folder / "harness_plugin_standin-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: harness-plugin-standin\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nharness.pytest_plugin = harness.pytest_plugin\n")
    return folder


@pytest.fixture
def plugin_env(pytester, monkeypatch, tmp_path):
    paths = [str(REPO), str(entry_point_standin(tmp_path / "site")), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    return pytester


def check_run_properties(properties: dict, results: Path) -> None:
    run = results / properties["harness_run_id"]
    assert (run / "samples.parquet").is_file() and properties["harness_run_dir"] == str(run)
    assert properties["harness_board"] == "sim" and properties["harness_model"] == "mlperf_tiny_vww"
    assert properties["harness_accuracy_distance_far"].startswith("0.5 (device (sim), 95 % CI ")
    assert properties["harness_latency_median"].endswith(" ms (sim, n = 4)")


def test_gates_pass_and_fail_with_their_figures_in_the_junit_report(plugin_env, tmp_path):
    """Under pytest's default junit_family (xunit2, no properties in a testcase) the runs' figures are the
    suite's properties, named after the test, and no PytestWarning is raised."""
    plugin_env.makepyfile(test_gates=GATES)
    junit, results = tmp_path / "junit.xml", tmp_path / "results"
    outcome = plugin_env.runpytest_subprocess(
        "-p", "harness.pytest_plugin", "-W", "error::pytest.PytestWarning", "-o", "junit_family=xunit2",
        f"--junitxml={junit}", f"--harness-results={results}",
    )  # fmt: skip
    outcome.assert_outcomes(passed=1, failed=1)
    failure = outcome.stdout.str()
    assert "PytestWarning" not in failure and "warning" not in outcome.stdout.lines[-1]
    assert "device accuracy on distance_far is not at least 0.99" in failure
    assert "device accuracy on distance_far: 0.5 (device (sim), 95 % CI" in failure
    assert "n = 4, on demo (demo-v2): synthetic images, not Wake Vision)" in failure  # the demo set says what it is

    suite = ET.parse(junit).getroot().find("testsuite")
    suite_properties = {p.get("name"): p.get("value") for p in suite.find("properties").iter("property")}
    assert suite_properties["harness_board"] == "sim"
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert cases["test_far_accuracy_fails"].find("failure") is not None
    assert cases["test_far_accuracy_passes"].find("failure") is None
    for name, case in cases.items():
        assert case.find("properties") is None  # xunit2's schema has none in a testcase
        prefix = f"test_gates.py::{name}::"
        check_run_properties(
            {k[len(prefix) :]: v for k, v in suite_properties.items() if k.startswith(prefix)}, results
        )


def test_under_xunit1_the_figures_are_the_testcase_properties(plugin_env, tmp_path):
    plugin_env.makepyfile(test_gates=GATES)
    junit, results = tmp_path / "junit.xml", tmp_path / "results"
    outcome = plugin_env.runpytest_subprocess(
        "-p", "harness.pytest_plugin", "-W", "error::pytest.PytestWarning", "-o", "junit_family=xunit1",
        "-k", "passes", f"--junitxml={junit}", f"--harness-results={results}",
    )  # fmt: skip
    outcome.assert_outcomes(passed=1)
    case = ET.parse(junit).getroot().find("testsuite").find("testcase")
    check_run_properties({p.get("name"): p.get("value") for p in case.find("properties").iter("property")}, results)


def test_the_entry_point_alone_loads_the_plugin_and_a_bad_board_fails_in_one_line(plugin_env):
    plugin_env.makepyfile(test_board="def test_board(harness_board):\n    pass\n")
    outcome = plugin_env.runpytest_subprocess("--harness-board", "nosuch")
    outcome.assert_outcomes(errors=1)
    said = outcome.stdout.str()
    assert "harness: unknown board 'nosuch'; valid boards: " in said and "Traceback" not in said

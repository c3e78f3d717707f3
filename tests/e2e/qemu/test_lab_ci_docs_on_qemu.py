"""docs/lab-ci.md's first pytest example on `--harness-board qemu_m7`: its latency gate gives a verdict there,
on the instructions QEMU counts (not n/a for a board that has no latency in ms)."""

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import TFLM_TREE, needs_tflm_tree
from tests.junit_records import recorded_properties

pytest_plugins = ("pytester",)
pytestmark = pytest.mark.skipif(
    not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
    reason="needs gcc-arm-none-eabi and qemu-system-arm (scripts/install --test installs them as root)",
)

REPO = Path(__file__).resolve().parents[3]
BLOCK = re.compile(r"```python\n# tests/(test_gates)\.py\n(.*?)```", re.DOTALL)


@needs_tflm_tree
def test_the_pages_latency_gate_judges_instructions_on_qemu(pytester, monkeypatch, tmp_path):
    ((name, block),) = BLOCK.findall((REPO / "docs" / "lab-ci.md").read_text())
    pytester.makepyfile(**{name: block})
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    junit = tmp_path / "junit.xml"
    outcome = pytester.runpytest_subprocess(
        "-p", "harness.pytest_plugin", "-k", "test_far_subset", "--harness-board", "qemu_m7",
        f"--harness-tflm={TFLM_TREE}", f"--junitxml={junit}", f"--harness-results={tmp_path / 'results'}",
    )  # fmt: skip
    outcome.assert_outcomes(passed=1, deselected=1)
    recorded = recorded_properties(junit)["test_far_subset"]
    assert recorded["harness_board"] == "qemu_m7"
    assert re.fullmatch(r"[\d.e+]+ instructions \(emulated, n = 10\)", recorded["harness_latency_median"])

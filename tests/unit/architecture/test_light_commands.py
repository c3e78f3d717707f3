"""Commands that list, gate or refuse import no package for drawing, statistics, templates or running a model.

matplotlib, scipy, jinja2 and the TFLite interpreters cost from a few hundredths of a second to most of a second
each to import; `harness runs list`, a refused `harness stream run` or `harness eval --model nope` use none of them, and
the test suite starts `python -m harness` some 1,500 times. They are imported where a figure is drawn
(harness/results/plots.py pyplot()), a test statistic is computed, a template rendered or a model run. Building
the parser is guarded by test_cli_startup.py; this file guards what the handlers import, for refusals in one
line and for commands that list, and (marked slow: it makes a run) for the commands that read a finished run.
Each command runs in a fresh interpreter, which then names the heavy modules it loaded: no wall clock here.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import fixture_model
from tests.import_probe import probe

# Never needed by these commands (scipy.stats alone takes half a second to import, matplotlib.pyplot a third).
HEAVY = ("matplotlib", "scipy", "jinja2", "tensorflow", "ai_edge_litert")
# Nor by a command that reads no image (an eval's refusal and `dataset list` load the image pipeline).
IMAGES = ("PIL",)


def check(folder: Path, line: str, code: int, says: str, reads_images: bool) -> None:
    probed = probe(line.split(), HEAVY + IMAGES, folder)
    assert probed.code == code, probed.stderr  # the command did what it is here for: listed, or refused for this reason
    assert says in probed.stderr
    unwanted = HEAVY if reads_images else HEAVY + IMAGES
    assert [name for name in probed.heavy if name in unwanted] == []


# id: (command line, its exit code, words of its one line on stderr, whether it reads images)
COMMANDS = {
    "models-list": ("models list", 0, "", False),
    "models-inspect-unknown": ("models inspect nope", 2, "unknown model", False),
    "models-convert-no-card": ("models convert --card nope.toml --out x.tflite", 2, "nope.toml", False),
    "dataset-subsets": ("dataset subsets", 0, "", False),
    "dataset-list": ("dataset list", 0, "", True),
    "boards-list": ("boards list", 0, "", False),
    "eval-unknown-model": ("eval --model nope", 2, "unknown model", True),
    "stream-run-unknown-model": ("stream run --wav nope.wav --model nope", 2, "unknown model", False),
    "stream-score-no-exposure": ("stream score --ledger nope.csv --detections nope.csv", 2, "--duration-ms", False),
    "stream-score-no-ledger": (
        "stream score --ledger nope.csv --detections nope.csv --duration-ms 1000",
        2,
        "nope.csv",
        False,
    ),
    "firmware-unknown-board": ("firmware generate --board nope", 2, "unknown board", False),
    "flash-unknown-board": ("flash --board nope", 2, "unknown board", False),
    "runs-list-empty": ("runs list --results results", 0, "", False),
    "runs-report-no-run": ("runs report nosuch --results results", 2, "nosuch", False),
    "runs-report-out-folder": ("runs report nosuch --results results --out results", 2, "is a folder", False),
    "runs-compare-no-run": ("runs compare nosuch other --results results", 2, "nosuch", False),
}


@pytest.mark.parametrize(("line", "code", "says", "reads_images"), COMMANDS.values(), ids=COMMANDS)
def test_a_light_command_imports_nothing_heavy(tmp_path, line, code, says, reads_images):
    (tmp_path / "results").mkdir()
    check(tmp_path, line, code, says, reads_images)


EVAL = "eval --model wv_quality_k_2_c_3 --limit 4 --results results --quiet"  # the small zoo model: about a second


@pytest.fixture(scope="module")
def finished(tmp_path_factory, private_cache) -> Path:
    """A folder holding results/ with one finished eval run (4 samples of the small zoo model on the virtual
    board), and a gates file."""
    fixture_model("wake_vision_zoo/wv_quality_k_2_c_3.tflite")
    folder = tmp_path_factory.mktemp("light-commands")
    made = subprocess.run(
        [sys.executable, "-m", "harness", *EVAL.split()], cwd=folder, capture_output=True, text=True, timeout=300
    )
    assert made.returncode == 0, made.stderr
    (folder / "gates.toml").write_text("[agreement]\nmin = 0.5\n")
    return folder


# As COMMANDS, RUN standing for the finished run's id.
ON_A_RUN = {
    "runs-list": ("runs list --results results", 0, "", False),
    "runs-check": ("runs check RUN --gates gates.toml --results results", 0, "", False),
    "runs-check-no-gates-file": ("runs check RUN --gates nope.toml --results results", 2, "nope.toml", False),
    "runs-compare-no-other-run": ("runs compare RUN nosuch --results results", 2, "nosuch", False),
}


@pytest.mark.slow
@pytest.mark.parametrize(("line", "code", "says", "reads_images"), ON_A_RUN.values(), ids=ON_A_RUN)
def test_a_light_command_on_a_finished_run_imports_nothing_heavy(finished, line, code, says, reads_images):
    run = next((finished / "results").iterdir()).name
    check(finished, line.replace("RUN", run), code, says, reads_images)

"""Driving the unmodified MLPerf Tiny runner (mlcommons/tiny benchmark/runner, a copy named by
HARNESS_MLPERF_RUNNER, with scikit-learn importable) against a DUT on a pseudo-terminal, and reading what it
logged. The runner finds boards by USB id, which a pseudo-terminal lacks: DRIVE registers the devices file's
DUT at the pty (docs/eembc.md), then runs main.py as it is, in a copy of the runner's folder."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from harness.model.dut import SCORE_FORMAT, ModelOutputs, ReconstructionError
from harness.model.references import TflmReference
from harness.model.tflite_file import TfliteModel

RUNNER = os.environ.get("HARNESS_MLPERF_RUNNER")
HAS_RUNNER = bool(RUNNER and (Path(RUNNER) / "main.py").is_file())
NO_RUNNER = "needs HARNESS_MLPERF_RUNNER: a copy of mlcommons/tiny benchmark/runner (not in this repository)"

DRIVE = """import os, runpy, sys, types
os.chdir(sys.argv.pop(1))
sys.path.insert(0, ".")
import device_manager
pty = sys.argv.pop(1)
def scan(self):
    for d in self._device_defs:
        if d.get("type") == "dut":
            self._add_device(types.SimpleNamespace(device=pty), d)
    for d in self.values():
        self._instantiate(d)
device_manager.DeviceManager.scan = scan
sys.argv[0] = "main.py"
runpy.run_path("main.py", run_name="__main__")
"""


def run_runner(tmp_path: Path, pty: str, datasets: Path, mode: str, name: str = "harness-dut") -> str:
    """main.py --mode=`mode` against the DUT at `pty` (115200 baud), on `datasets`; its stdout, once it
    exited 0."""
    runner = tmp_path / "runner"
    if not runner.exists():
        shutil.copytree(RUNNER, runner)
    (tmp_path / "drive.py").write_text(DRIVE)
    (tmp_path / "devices.yaml").write_text(f"- name: {name}\n  type: dut\n  baud: 115200\n")
    done = subprocess.run(
        [sys.executable, str(tmp_path / "drive.py"), str(runner), pty, f"--device_list={tmp_path / 'devices.yaml'}",
         f"--dataset_path={datasets}", f"--mode={mode}"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def logged_scores(out: str) -> list[tuple[str, int, list[float]]]:
    """(file, segment, the m-results values) for each input the runner loaded and scored, in order."""
    loaded = re.findall(r"Loading file (\S+) segment (\d+)", out)
    printed = re.findall(r"m-results\s*:\s*\[([^\]]*)\]", out)
    assert len(loaded) == len(printed) > 0, (len(loaded), len(printed))
    return [(f, int(s), [float(v) for v in p.split(",")]) for (f, s), p in zip(loaded, printed, strict=True)]


def host_scores(model: TfliteModel, computation, data: bytes, uint8_input: bool) -> list[float]:
    """What the DUT prints for `data` (one input as the runner sends it), computed with TFLM on the host."""
    reference = TflmReference(model)

    def run_model(tensor: np.ndarray) -> bytes:
        return reference.run(tensor.reshape(model.input.shape))

    if isinstance(computation, ReconstructionError):
        features = np.frombuffer(data, np.float32)
        score = np.frombuffer(computation.result(run_model, features), np.float32)[0]
        return [float(SCORE_FORMAT.format(float(score)))]  # as printed: %0.3f
    assert isinstance(computation, ModelOutputs)
    raw = np.frombuffer(data, np.uint8)
    tensor = (raw.astype(np.int16) - 128).astype(np.int8) if uint8_input else raw.view(model.input.numpy_dtype)
    spec = model.output
    out = np.frombuffer(run_model(tensor), spec.numpy_dtype).astype(np.int32)
    return [float(f"{np.float32((v - spec.zero_point) * np.float32(spec.scale)):f}") for v in out]


AD01_WINDOW, AD01_STRIDE = 2560, 512  # the runner sends ad01's files in windows of 640 features every 128


def assert_scores_are_the_hosts(out: str, folder: Path, model: TfliteModel, computation, uint8_input: bool) -> list:
    """Every score the runner logged (`out`) for the files of `folder` is what TFLM on the host gives for the
    input it loaded (ad01: the window at its segment); the logged scores."""
    scores = logged_scores(out)
    for file, segment, printed in scores:
        data = (folder / file).read_bytes()
        if isinstance(computation, ReconstructionError):
            data = data[segment * AD01_STRIDE : segment * AD01_STRIDE + AD01_WINDOW]
        assert printed == host_scores(model, computation, data, uint8_input), (file, segment)
    return scores

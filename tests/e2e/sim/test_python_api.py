"""The Python API on the virtual board: the README's main job in a few lines, its samples as a DataFrame
equal to samples.parquet, its summary the run record's; the CLI's eval gives the same run; errors are
exceptions and nothing is printed."""

import json
import subprocess
import sys

import pytest

import harness
from harness.errors import UserError
from harness.results.summary import EvalSummary


def test_readme_main_job_in_a_few_lines(tmp_path, vww_model, capfd):
    pd = pytest.importorskip("pandas", reason="run.samples_frame() needs pandas: pip install 'harness[lab]'")
    with harness.open_board("sim") as board:
        run = board.evaluate(subsets="distance_far", results=tmp_path)
    frame = run.samples_frame()
    pd.testing.assert_frame_equal(frame, pd.read_parquet(run.path / "samples.parquet"))
    far = run.summary.subsets["distance_far"]
    assert isinstance(run.summary, EvalSummary) and run.path.parent == tmp_path
    assert len(frame) == run.summary.samples == far.n + far.pool_added and int(frame["in_distance_far"].sum()) == far.n
    assert (frame["device_output"] == frame["tflm_output"]).all() and set(frame["latency_source"]) == {"sim"}
    accuracy = run.accuracy("distance_far")
    assert accuracy.value == far.device.accuracy and accuracy.n == far.n and accuracy.source == "device (sim)"
    assert json.loads((run.path / "summary.json").read_text())["subsets"]["distance_far"]["n"] == far.n
    assert capfd.readouterr() == ("", "")  # no progress, no notices: the API prints nothing


def test_the_cli_and_the_api_run_the_same_eval(tmp_path):
    api_run = harness.evaluate(subsets=["distance_far"], limit=4, results=tmp_path / "api")
    command = ["eval", "--subset", "distance_far", "--limit", "4", "--json", "--results", str(tmp_path / "cli")]
    done = subprocess.run(
        [sys.executable, "-m", "harness", *command],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # --json: no progress
    cli_run = harness.load_run(json.loads(done.stdout)["run_id"], results=tmp_path / "cli")
    assert cli_run.manifest.settings == api_run.manifest.settings
    assert cli_run.manifest.dataset.subset_content_sha256 == api_run.manifest.dataset.subset_content_sha256
    assert cli_run.summary.subsets["distance_far"].device == api_run.summary.subsets["distance_far"].device


def test_progress_on_request(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("CI", "1")  # plain progress lines
    harness.evaluate(subsets="distance_far", limit=2, results=tmp_path, progress=True)
    assert "eval sim: " in capfd.readouterr().err


def test_bad_input_is_an_exception_naming_the_setting(tmp_path):
    with pytest.raises(
        UserError,
        match=r"^'limit': expected a number of samples: a whole number of at least 1 and at most [\d,]+, got '0'$",
    ):
        harness.evaluate(limit=0, results=tmp_path)
    with pytest.raises(UserError, match=r"unknown setting nosuch; the settings are: board, model"):
        harness.evaluate(nosuch=1, results=tmp_path)
    with pytest.raises(UserError, match=r"needs its board file: name it, e\.g\. open_board\('nucleo_h743'"):
        harness.open_board(url="rfc2217://localhost:4000")
    with pytest.raises(UserError, match=r"drop 'port' /dev/ttyACM0"):
        harness.open_board("sim", port="/dev/ttyACM0")
    with pytest.raises(UserError, match=r"port belong to the board: give them to harness.open_board"):
        harness.open_board("sim").evaluate(port="/dev/ttyACM0")
    with harness.open_board("sim") as board:
        pass
    with pytest.raises(UserError, match=r"board sim was closed"):
        board.evaluate(results=tmp_path)
    assert not list(tmp_path.iterdir())  # nothing half-written


@pytest.mark.parametrize(
    "call",
    [
        lambda: harness.stream("s.wav", results=""),
        lambda: harness.evaluate(results=""),
        lambda: harness.resume("RUN", results=""),
        lambda: harness.load_run("RUN", results=""),
    ],
    ids=["stream", "evaluate", "resume", "load_run"],
)
def test_an_empty_results_is_refused_never_the_working_folder(tmp_path, monkeypatch, call):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.wav").write_bytes(b"")
    with pytest.raises(UserError, match=r"^'results' is empty; name the folder"):
        call()
    assert [p.name for p in tmp_path.iterdir()] == ["s.wav"]


def test_import_harness_stays_light_and_lists_the_api():
    probe = "import json, sys, harness; print(json.dumps([sorted(dir(harness)), sorted(sys.modules)]))"
    names, modules = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout)
    assert {"open_board", "evaluate", "perf", "profile", "stream", "load_run", "resume"} <= set(names)
    assert not [m for m in modules if m.split(".")[0] in ("numpy", "pyarrow", "pydantic", "rich")]

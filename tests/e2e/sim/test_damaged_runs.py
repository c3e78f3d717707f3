"""Damaged run folders and bad result paths: one line naming the problem and the fix, exit code 2, no
traceback, nothing left behind. One real run on the virtual board; each case damages a copy of it."""

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import assert_refused_in_one_line, error_lines
from tests.forked_cli import run_harness_command

RUN = "run"  # the damaged copy's folder name under results/


def _harness(cwd: Path, *args):
    return run_harness_command([*args], cwd=cwd, env=os.environ.copy())


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """A small finished eval run of the default model (4 samples)."""
    folder = tmp_path_factory.mktemp("made")
    done = _harness(folder, "eval", "--limit", "4", "--results", "results", "--quiet")
    assert done.returncode == 0, done.stderr
    return folder / done.stdout.strip()


def _random_bytes(path: Path) -> None:
    path.write_bytes(os.urandom(4096))


def _cut_short(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _json_list(path: Path) -> None:
    path.write_text(json.dumps([1, 2, 3]))


def _empty(path: Path) -> None:
    path.write_text("")


DAMAGES = {  # case: (file, how, the words the one line holds)
    "parquet-random": ("samples.parquet", _random_bytes, ["samples.parquet is damaged", "restore"]),
    "parquet-cut": ("samples.parquet", _cut_short, ["samples.parquet is damaged", "cut short"]),
    "manifest-list": ("manifest.json", _json_list, ["manifest.json is damaged", "JSON list"]),
    "manifest-cut": ("manifest.json", _cut_short, ["manifest.json is damaged", "not valid JSON"]),
    "summary-list": ("summary.json", _json_list, ["summary.json is damaged", "JSON list"]),
    "summary-cut": ("summary.json", _cut_short, ["summary.json is damaged", "not valid JSON"]),
    "summary-empty": ("summary.json", _empty, ["summary.json is damaged", "empty"]),
}
COMMANDS = {  # the commands that read one run (`run`: the damaged copy's folder, `good`: the undamaged run)
    "report": lambda run, good: ["runs", "report", run, "--out", "report.html"],
    "compare": lambda run, good: ["runs", "compare", good, run],
    "check": lambda run, good: ["runs", "check", run, "--gates", "gates.toml"],
}


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _workspace(tmp_path: Path, made: Path) -> Path:
    """tmp_path/results holding the good run and a copy of it named `run`; gates.toml beside."""
    results = tmp_path / "results"
    results.mkdir()
    shutil.copytree(made, results / made.name)
    shutil.copytree(made, results / RUN)
    (tmp_path / "gates.toml").write_text("[agreement]\nmin = 0.5\n")
    return results


def _refused(done, tmp_path: Path, before: list[str], *expected: str) -> None:
    assert_refused_in_one_line(done, *expected)
    assert ".partial" not in done.stderr
    assert _listing(tmp_path) == before, "the refused command left files behind"


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_run_is_refused_naming_the_file(tmp_path, made, damage, command):
    results = _workspace(tmp_path, made)
    name, how, expected = DAMAGES[damage]
    how(results / RUN / name)
    before = _listing(tmp_path)
    args = COMMANDS[command](RUN, made.name)
    done = _harness(tmp_path, *args, "--results", "results")
    _refused(done, tmp_path, before, RUN, *expected)


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_runs_lists_the_others_and_the_damaged_one_as_damaged(tmp_path, made, damage):
    results = _workspace(tmp_path, made)
    name, how, expected = DAMAGES[damage]
    how(results / RUN / name)
    before = _listing(tmp_path)
    done = _harness(tmp_path, "runs", "list", "--results", "results", "--json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    rows = json.loads(done.stdout)
    assert (rows[0]["run_id"], rows[0]["damaged"]) == (made.name, None)
    (bad,) = [row for row in rows if row["damaged"] is not None]
    assert bad["run_id"] == RUN and bad["kind"] is None
    assert f"results/{RUN}" in bad["damaged"] and all(word in bad["damaged"] for word in expected), bad
    (line,) = error_lines(done)  # said on stderr as well
    assert "listed as damaged" in line and bad["damaged"] in line, line
    assert _listing(tmp_path) == before


@pytest.mark.parametrize("damage", ["manifest-list", "summary-cut"])
def test_runs_list_table_has_a_row_for_the_damaged_run_within_80_columns(tmp_path, made, damage):
    results = _workspace(tmp_path, made)
    name, how, _ = DAMAGES[damage]
    how(results / RUN / name)
    done = run_harness_command(
        ["runs", "list", "--results", "results"], cwd=tmp_path, env=os.environ | {"COLUMNS": "80"}
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, done.stdout
    assert any(line.split() == ["│", "1", "│", made.name, "│"] for line in lines), done.stdout  # listed as usual
    start = lines.index("damaged runs in results (no figures: restore or remove them)")
    assert ["│", "d1", "│", RUN, "│"] in [line.split() for line in lines[start:]], done.stdout  # no run number
    problem = " ".join(cell for line in lines[start:] for cell in line.strip("│┃ ").split("│")[-1:])
    assert f"results/{RUN}: {name} is damaged" in " ".join(problem.split()), done.stdout


def _not_there(tmp_path: Path) -> str:
    return str(tmp_path / "nowhere")


def _a_file(tmp_path: Path) -> str:
    (tmp_path / "notes.txt").write_text("not a folder")
    return "notes.txt"


@pytest.mark.parametrize(
    "where, expected",
    [(_not_there, ["does not exist", "--results"]), (_a_file, ["is a file, not a folder", "--results"])],
    ids=["nonexistent", "a-file"],
)
def test_runs_refuses_results_that_are_not_a_folder(tmp_path, where, expected):
    results = where(tmp_path)
    before = _listing(tmp_path)
    _refused(_harness(tmp_path, "runs", "list", "--results", results), tmp_path, before, results, *expected)


def test_report_out_a_folder_is_refused_before_writing(tmp_path, made):
    _workspace(tmp_path, made)
    (tmp_path / "site").mkdir()
    before = _listing(tmp_path)
    done = _harness(tmp_path, "runs", "report", made.name, "--results", "results", "--out", "site")
    _refused(done, tmp_path, before, "site is a folder", "--out")


@pytest.mark.parametrize("bound", ["nan", "inf", "-inf"])
def test_a_gate_with_a_non_finite_bound_is_refused(tmp_path, made, bound):
    _workspace(tmp_path, made)
    (tmp_path / "gates.toml").write_text(f"[agreement]\nmin = {bound}\n")
    before = _listing(tmp_path)
    done = _harness(tmp_path, "runs", "check", made.name, "--results", "results", "--gates", "gates.toml")
    _refused(done, tmp_path, before, "gates file gates.toml", bound.removeprefix("-"), "not a finite number")


GATE_FILES = {  # case: (gates.toml's text, or None for no file; the words the one line holds)
    "gates-missing": (None, ["gates file gates.toml does not exist", "docs/lab-ci.md"]),
    "gates-bad-toml": (b"[agreement\n", ["gates file gates.toml is not valid TOML", "line 1", "docs/lab-ci.md"]),
    "gates-empty": (b"", ["gates file gates.toml has no gates", "[agreement] min = 0.99"]),
    "gates-unknown-gate": (b"[nosuch]\nmin = 1\n", ["unknown gate [nosuch]", "valid: [agreement] min"]),
    "gates-unknown-setting": (b"[agreement]\nminimum = 1\n", ["[agreement] has no setting minimum", "it takes min"]),
    "gates-bound-text": (b'[agreement]\nmin = "high"\n', ["[agreement] min must be a number", "'high'"]),
    "gates-bound-missing": (b"[agreement]\n", ["[agreement] needs `min = NUMBER`"]),
    "gates-bound-bool": (b"[agreement]\nmin = true\n", ["[agreement] min must be a number", "True"]),
}


@pytest.mark.parametrize("case", list(GATE_FILES))
def test_a_bad_gates_file_is_refused_naming_it(tmp_path, made, case):
    _workspace(tmp_path, made)
    text, expected = GATE_FILES[case]
    if text is None:
        (tmp_path / "gates.toml").unlink()
    else:
        (tmp_path / "gates.toml").write_bytes(text)
    before = _listing(tmp_path)
    done = _harness(tmp_path, "runs", "check", made.name, "--results", "results", "--gates", "gates.toml")
    _refused(done, tmp_path, before, *expected)


def test_check_against_a_baseline_that_is_no_run_is_refused(tmp_path, made):
    _workspace(tmp_path, made)
    before = _listing(tmp_path)
    args = ("runs", "check", made.name, "--results", "results", "--gates", "gates.toml", "--baseline", "zz")
    _refused(_harness(tmp_path, *args), tmp_path, before, "zz is not a run folder", "harness runs")

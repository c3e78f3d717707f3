"""The console tables of `runs list`, `runs compare`, `cache list` and `models inspect`, from real sim runs,
printed at 80 columns (stdout is a pipe: its width is $COLUMNS): no line is wider, and every cell that names
something (run id, subset, model, board, cache key, operator) is whole on one line of its table."""

import json
import os
import subprocess

import pytest

from harness.console import percent, percent_interval
from harness.results.runs import load_run
from tests.conftest import fixture_model
from tests.forked_cli import run_harness_command

MODEL = "wv_quality_k_2_c_3"
SUBSETS = ("all", "depiction_non_person", "distance_medium")


def _harness(*args: str, cwd=None) -> subprocess.CompletedProcess:
    done = run_harness_command([*args], cwd=cwd, env=os.environ.copy() | {"COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    return done


def _fits_80(text: str) -> list[str]:
    lines = text.splitlines()
    assert lines and max(len(line) for line in lines) <= 80, text
    return lines


def _cells(lines: list[str]) -> list[str]:
    """The cells of a rich table's body rows, stripped (a cell folded over lines would show as its pieces)."""
    return [cell.strip() for line in lines if line.startswith("│") for cell in line.strip("│").split("│")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    fixture_model(f"wake_vision_zoo/{MODEL}.tflite")  # skips without the shared fixtures
    folder = tmp_path_factory.mktemp("tables")
    ids = []
    for _ in range(2):
        command = ("eval", "--model", MODEL, "--subset", ",".join(SUBSETS), "--limit", "4")
        done = _harness(*command, "--results", str(folder / "r"), "--quiet", cwd=folder)
        ids.append(os.path.basename(done.stdout.strip()))
    return folder / "r", ids


def test_runs_list_fits_80_columns_with_ids_and_names_whole(runs):
    results, ids = runs
    lines = _fits_80(_harness("runs", "list", "--results", str(results)).stdout)
    cells = _cells(lines)
    for number, run_id in enumerate(ids, 1):
        assert [line for line in lines if line.startswith("│") and _cells([line]) == [str(number), run_id]], lines
        run = load_run(run_id, results)
        first = run.eval_summary.subsets[SUBSETS[0]].device
        score_rows = [
            line for line in lines if line.startswith("│") and _cells([line])[:3] == [str(number), MODEL, "sim"]
        ]
        assert len(score_rows) == 1, lines
        assert percent(first.accuracy) in _cells(score_rows) and percent_interval(first.accuracy_ci95) in _cells(
            score_rows
        ), score_rows
    assert cells.count(MODEL) == 2 and cells.count(SUBSETS[0]) == 2, lines


def test_runs_compare_fits_80_columns_with_each_accuracy_s_interval(runs):
    results, (a, b) = runs
    lines = _fits_80(_harness("runs", "compare", a, b, "--results", str(results)).stdout)
    assert f"A: {a}" in lines and f"B: {b}" in lines  # each run id whole on its line
    summaries = [load_run(run_id, results).eval_summary for run_id in (a, b)]
    for subset in SUBSETS:
        rows = [_cells([line]) for line in lines if line.startswith("│") and _cells([line])[0] == subset]
        assert len(rows) == 2, (subset, lines)  # the accuracy table and McNemar's
        # both runs have the same samples: the interval over the paired samples is each run's stored one
        shown = [
            (percent(s.subsets[subset].device.accuracy), percent_interval(s.subsets[subset].device.accuracy_ci95))
            for s in summaries
        ]
        assert rows[0][2:] == [*shown[0], *shown[1]], rows[0]
        assert rows[1][-1] in ("not significant", "SIGNIFICANT"), rows[1]


def test_cache_list_fits_80_columns_with_each_key_whole(runs):
    listed = json.loads(_harness("cache", "list", "--json").stdout)
    assert listed["entries"]  # the runs filled the input cache
    lines = _fits_80(_harness("cache", "list").stdout)
    cells = _cells(lines)
    for entry in listed["entries"]:
        assert cells.count(entry["key"]) == 2, (entry["key"], lines)  # in both tables


def test_models_inspect_fits_80_columns_with_boards_and_operators_whole(runs):
    inspected = json.loads(_harness("models", "inspect", MODEL, "--layers", "--json").stdout)
    lines = _fits_80(_harness("models", "inspect", MODEL, "--layers").stdout)
    cells = _cells(lines)
    for layer in inspected["layers"]:
        row = [
            line
            for line in lines
            if line.startswith("│") and _cells([line])[:2] == [str(layer["index"]), layer["operator"]]
        ]
        assert len(row) == 1, (layer, lines)
        assert _cells(row)[2] == str(layer["output_shape"]), row
    assert len(inspected["fits"]) > 1
    for fit in inspected["fits"]:
        assert fit["board"] in cells, (fit["board"], lines)
        row = [_cells([line]) for line in lines if line.startswith("│") and _cells([line])[0] == fit["board"]]
        assert row == [
            [
                fit["board"],
                "yes" if fit["fits"] else "NO",
                f"{fit['flash_available']:,}",
                f"{fit['arena_available']:,}",
                f"{fit['arena_available'] - fit['arena_needed']:+,}",
            ]
        ]
    need = inspected["fits"][0]
    assert f"needs {need['flash_needed']:,} B of flash and an arena of {need['arena_needed']:,} B" in " ".join(lines)


def test_off_a_terminal_the_width_is_columns(monkeypatch):
    from harness.console import stdout_width

    monkeypatch.setenv("COLUMNS", "80")
    assert stdout_width() == 80
    for value in ("", "wide", "0"):
        monkeypatch.setenv("COLUMNS", value)
        assert stdout_width() == 160

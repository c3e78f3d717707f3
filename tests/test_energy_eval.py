"""`harness eval --meter` against the WT310 simulator, `harness lpirc-score`, and meter input errors."""

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from harness.energy.profile import PowerProfile
from harness.energy.wt310_sim import Wt310Simulator
from harness.lpirc.order import shuffle_in_groups
from harness.lpirc.scores import RunScore, prize_categories


def _harness(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True, env=os.environ.copy()
    )


def test_eval_with_a_simulated_meter_reports_energy_labelled_sim_and_lpirc_scores_it(tmp_path, small_model):
    with Wt310Simulator(PowerProfile(idle_watts=0.5, volts=5.0)) as simulator:
        done = _harness(
            "eval",
            "--model",
            "wv_quality_k_2_c_3",
            "--subset",
            "distance_far",
            "--limit",
            "8",
            "--meter",
            f"wt310:{simulator.resource}",
            "--shuffle",
            "3",
            "--results",
            str(tmp_path / "results"),
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    assert "energy (sim, host windows" in done.stdout
    (run,) = (tmp_path / "results").iterdir()
    summary = json.loads((run / "summary.json").read_text())
    manifest = json.loads((run / "manifest.json").read_text())
    energy = summary["energy"]
    assert energy["source"] == "sim" and manifest["meter"]["source"] == "sim"
    assert energy["windows"] == "host" and energy["inferences"] == 8
    assert energy["idle_watts"] == pytest.approx(0.5, rel=1e-3)
    windows = pq.read_table(run / "energy.parquet").to_pydict()
    durations = np.array(windows["window_end_s"]) - np.array(windows["window_start_s"])
    # Constant 0.5 W: each window's energy is 0.5 W times its length.
    assert np.allclose(windows["window_uj"], 0.5 * durations * 1e6, rtol=0.01)
    assert energy["uj_per_inference"]["median"] == pytest.approx(0.5 * np.median(durations) * 1e6, rel=0.01)
    assert manifest["dataset"]["order_seed"] == 3
    assert sorted(windows["received_s"]) == windows["received_s"]

    assert _harness("report", str(run), "--out", str(tmp_path / "r.html"), cwd=tmp_path).returncode == 0
    assert "µJ per inference" in (tmp_path / "r.html").read_text()

    scored = _harness("lpirc-score", str(run), "--json", cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    report = json.loads(scored.stdout)
    (entry,) = report["runs"]
    assert entry["accuracy"] == pytest.approx(summary["subsets"]["distance_far"]["device"]["accuracy"])
    assert entry["energy_source"] == "sim" and entry["wh"] > 0
    assert entry["score"] == pytest.approx(entry["accuracy"] / entry["wh"])
    limited = json.loads(_harness("lpirc-score", str(run), "--json", "--time-limit", "0", cwd=tmp_path).stdout)
    assert limited["runs"][0]["accuracy"] == 0.0 and limited["runs"][0]["wh"] == 0.0


def test_prize_categories_by_hand():
    runs = [
        RunScore("a", "eval", "accuracy", 0.90, 2.0, "device", 0.45),
        RunScore("b", "eval", "accuracy", 0.80, 1.0, "device", 0.80),
        RunScore("c", "eval", "accuracy", 0.60, 0.5, "device", 1.20),
        RunScore("d", "eval", "accuracy", 0.95, 3.0, "device", 0.95 / 3),
    ]
    # accuracy mean .8125, sd .1341 -> bar .9466: only d; energy mean 1.625, sd .9601 -> bar .665: only c.
    prizes = prize_categories(runs)
    assert prizes["best_score"] == "c"
    assert prizes["least_energy_accurate"] == "d"
    assert prizes["best_accuracy_frugal"] == "c"
    assert prizes["accuracy_at_least"] == pytest.approx(0.8125 + np.std([0.9, 0.8, 0.6, 0.95]))


def test_group_shuffle_keeps_groups_in_place_and_repeats_from_its_seed():
    order = shuffle_in_groups(100, 11)
    assert sorted(order) == list(range(100)) and order == shuffle_in_groups(100, 11)
    assert order != list(range(100)) and order != shuffle_in_groups(100, 12)
    assert max(abs(position - source) for position, source in enumerate(order)) < 12


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "--limit", "2", "--meter", "geiger:1"], "unknown meter kind"),
        (["eval", "--limit", "2", "--meter", "wt310:NOT::A::RESOURCE"], "cannot open VISA resource"),
        (["meter", "csv:missing.csv"], "cannot read meter log"),
        (["eval", "--limit", "2", "--meter", "csv:log.csv"], "cannot time this run"),
        (["lpirc-score", "no-such-run"], "is not a run folder"),
    ],
)
def test_bad_meter_and_score_input_is_one_line_and_exit_2(tmp_path, args, message):
    done = _harness(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())

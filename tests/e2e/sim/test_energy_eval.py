"""`harness eval --meter` against the WT310 simulator, `harness lpirc-score`, and meter input errors."""

import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.boards import get_board
from harness.device.sim_board import LinkEmulation
from harness.energy.meter import open_meter
from harness.energy.profile import PowerProfile
from harness.energy.wt310_sim import Wt310Simulator
from harness.errors import UserError
from harness.eval.order import shuffle_in_groups
from harness.eval.perf_energy import measure_energy
from harness.link.framing import OVERHEAD
from harness.lpirc.scores import RunScore, lpirc_scores, prize_categories, score_run
from tests.fake_runner import ChecksumRunner, core_on_pty


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
    assert "energy (sim, device-timed windows" in done.stdout
    (run,) = (tmp_path / "results").iterdir()
    summary = json.loads((run / "summary.json").read_text())
    manifest = json.loads((run / "manifest.json").read_text())
    energy = summary["energy"]
    assert energy["source"] == "sim" and manifest["meter"]["source"] == "sim"
    # The virtual board times invokes with a real clock: windows are the device's own invoke times.
    assert energy["windows"] == "device-timed" and energy["inferences"] == 8
    assert energy["idle_watts"] == pytest.approx(0.5, rel=1e-3)
    # Invokes of a few ms against 100 ms meter updates: every window is flagged, in the file and on the console.
    coarse = energy["resolution"]
    assert coarse["meter_period_s"] == pytest.approx(0.1, rel=0.05)
    assert coarse["windows_too_short"] == 8 and coarse["shortest_window_s"] < 0.4
    assert "not measured but interpolated" in coarse["statement"]
    assert f"warning: {coarse['statement']}" in " ".join(done.stdout.split())  # the console wraps lines
    windows = pq.read_table(run / "energy.parquet").to_pydict()
    durations = np.array(windows["window_end_s"]) - np.array(windows["window_start_s"])
    device_us = pq.read_table(run / "samples.parquet").to_pydict()["microseconds"]
    assert windows["window_kind"] == ["device-timed"] * 8
    assert np.allclose(np.sort(durations), np.sort(np.array(device_us) / 1e6), rtol=1e-6, atol=1e-9)
    assert all(
        end <= received + 1e-9 for end, received in zip(windows["window_end_s"], windows["received_s"], strict=True)
    )
    # Constant 0.5 W: each window's energy is 0.5 W times its length.
    assert np.allclose(windows["window_uj"], 0.5 * durations * 1e6, rtol=0.01)
    assert energy["uj_per_inference"]["median"] == pytest.approx(0.5 * np.median(durations) * 1e6, rel=0.01)
    assert manifest["dataset"]["order_seed"] == 3
    assert sorted(windows["received_s"]) == windows["received_s"]

    assert _harness("runs", "report", str(run), "--out", str(tmp_path / "r.html"), cwd=tmp_path).returncode == 0
    assert "µJ per inference" in (tmp_path / "r.html").read_text()

    scored = _harness("lpirc", "score", str(run), "--json", cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    report = json.loads(scored.stdout)
    (entry,) = report["runs"]
    assert entry["accuracy"] == pytest.approx(summary["subsets"]["distance_far"]["device"]["accuracy"])
    assert entry["energy_source"] == "sim" and entry["wh"] > 0
    assert entry["score"] == pytest.approx(entry["accuracy"] / entry["wh"])
    limited = json.loads(_harness("lpirc", "score", str(run), "--json", "--time-limit", "0", cwd=tmp_path).stdout)
    assert limited["runs"][0]["accuracy"] == 0.0 and limited["runs"][0]["wh"] == 0.0


def _staircase_ramp(seconds: float) -> PowerProfile:
    """0.3 W rising by 0.02 W a second in 10 ms steps: a window of the wrong length or far off on the clock
    meters another energy, while the host's scheduling (tens of ms on a loaded machine, where the meter's
    integration start and an answer's arrival are read) stays well inside 1 %."""
    steps = round(seconds / 0.01)
    return PowerProfile(0.3, 5.0, tuple((k * 0.01, (k + 1) * 0.01, 0.3 + 0.02 * k * 0.01) for k in range(steps)))


def test_perf_with_a_simulated_meter_is_within_1_percent_of_the_scripted_profile(tmp_path):
    profile = _staircase_ramp(60.0)
    with Wt310Simulator(profile) as simulator:
        epoch = simulator.state.epoch  # profile time 0 on the host's monotonic clock, which the CLI shares
        done = _harness(
            *("perf", "--runs", "5", "--warmups", "1", "--emulate-invoke-ms", "2", "--json"),
            *("--meter", f"wt310:{simulator.resource}", "--window-seconds", "0.6"),
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    energy = json.loads(done.stdout)["energy"]
    assert energy["source"] == "sim" and energy["window_kind"] == "device-timed" and len(energy["windows"]) == 5
    for window in energy["windows"]:
        assert window["device_seconds"] >= 0.6
        assert window["inferences"] == sum(n for _, _, n in window["spans"])
        analytic_j = sum(profile.energy_j(start - epoch, end - epoch) for start, end, _ in window["spans"])
        assert window["uj_per_inference"] == pytest.approx(analytic_j / window["inferences"] * 1e6, rel=0.01)
    assert energy["uj_per_inference"] == pytest.approx(np.median([w["uj_per_inference"] for w in energy["windows"]]))
    assert energy["resolution"]["windows_too_short"] == 0


class _ClockedRunner(ChecksumRunner):
    """Notes when each invoke began on the host's monotonic clock (the WT310 simulator's too): the
    device's own timeline, which harness never sees."""

    def __init__(self):
        super().__init__(16, 4)
        self.began: list[float] = []

    def invoke(self, user) -> int:
        self.began.append(time.monotonic())
        return super().invoke(user)


def test_perf_energy_windows_start_when_the_request_reached_the_device_not_at_the_answer():
    """A 0.4 s window is two BENCH spans (2 KiB frames: 255 timings, then 165); on a link paced at 38,400
    baud their answers take ~0.53 s and ~0.35 s to cross. Power rises as e^(t / 10 s), so a span placed
    t late meters e^(t / 10 s) - 1 more: the answer's transfer (a span ending when it was read) > 4 %, a
    host scheduling delay of up to 0.1 s (the start is read just before the request is sent) under 1 %.
    The truth is the profile over when the device's runner began the invokes, not harness's spans."""
    tau, invoke_s, baud = 10.0, 0.001, 38400
    steps = [(k * 0.01, (k + 1) * 0.01, 0.1 * math.exp(k * 0.01 / tau)) for k in range(3000)]
    profile = PowerProfile(0.1, 5.0, tuple(steps))
    runner = _ClockedRunner()
    emulation = LinkEmulation(baud, 0, invoke_s * 1000)
    with (
        Wt310Simulator(profile) as simulator,
        core_on_pty(runner, rx_frame=524, tx_frame=2060, emulation=emulation, timeout=2.0) as (_, client),
        open_meter(f"wt310:{simulator.resource}") as meter,
    ):
        client.hello()
        energy = measure_energy(client, get_board("sim"), bytes(16), meter, invoke_s, window_seconds=0.4)
        epoch = simulator.state.epoch
    began = iter(runner.began)
    for window in energy.windows:
        truth_j = late_j = 0.0
        for start, end, inferences in window.spans:
            first = next(began) - epoch  # when the device began this span's invokes
            for _ in range(inferences - 1):
                next(began)
            answer_s = client.wire_seconds(OVERHEAD + 4 + 8 * inferences)
            truth_j += profile.energy_j(first, first + end - start)
            late_j += profile.energy_j(first + answer_s, first + answer_s + end - start)
        assert len(window.spans) == 2 and late_j > 1.04 * truth_j  # a span ending at its answer would miss by > 4 %
        assert window.uj_per_inference == pytest.approx(truth_j / window.inferences * 1e6, rel=0.01)
    assert next(began, None) is None  # every invoke is in a span


def test_prize_categories_by_hand():
    runs = [
        RunScore("a", "eval", "accuracy", 0.90, 2.0, "device", 0.45),
        RunScore("b", "eval", "accuracy", 0.80, 1.0, "device", 0.80),
        RunScore("c", "eval", "accuracy", 0.60, 0.5, "device", 1.20),
        RunScore("d", "eval", "accuracy", 0.95, 3.0, "device", 0.95 / 3),
    ]
    # accuracy mean .8125, sd .1341 -> bar .9466: only d; energy mean 1.625, sd .9601 -> bar .665: only c.
    prizes = prize_categories(runs)
    assert (prizes["champion"], prizes["second"], prizes["third"]) == (["c"], ["b"], ["a"])
    assert prizes["least_energy_accurate"] == ["d"]
    assert prizes["best_accuracy_frugal"] == ["c"]
    assert prizes["accuracy_at_least"] == pytest.approx(0.8125 + np.std([0.9, 0.8, 0.6, 0.95]))
    assert prizes["no_energy"] == []


def test_a_tie_gives_several_winners_and_tied_runs_share_a_place():
    runs = [
        RunScore("a", "eval", "accuracy", 0.8, 1.0, "device", 0.8),
        RunScore("b", "eval", "accuracy", 0.8, 1.0, "device", 0.8),
        RunScore("c", "eval", "accuracy", 0.6, 1.0, "device", 0.6),
        RunScore("d", "eval", "accuracy", 0.2, 2.0, "device", 0.1),
    ]
    prizes = prize_categories(runs)
    assert prizes["champion"] == ["a", "b"] and prizes["second"] == [] and prizes["third"] == ["c"]
    # energy mean 1.25, sd .433 -> bar .817: nobody; accuracy mean .6, sd .245 -> bar .845: nobody either.
    assert prizes["least_energy_accurate"] == [] and prizes["best_accuracy_frugal"] == []
    heavy = [RunScore(name, "eval", "accuracy", 0.1, 3.0, "device", 0.1 / 3) for name in "ef"]
    frugal = prize_categories([*runs[:2], *heavy])  # energy mean 2, sd 1 -> bar 1: a and b, equally accurate
    assert frugal["best_accuracy_frugal"] == ["a", "b"]


def test_runs_without_energy_take_no_prize_and_stay_out_of_the_mean():
    runs = [
        RunScore("a", "eval", "accuracy", 0.9, 2.0, "device", 0.45),
        RunScore("b", "eval", "accuracy", 0.5, 1.0, "device", 0.5),
        RunScore("zero", "eval", "accuracy", 0.99, 0.0, "device", None),
        RunScore("nan", "eval", "accuracy", 0.99, float("nan"), "device", None),
    ]
    prizes = prize_categories(runs)
    assert prizes["no_energy"] == ["zero", "nan"]
    assert prizes["champion"] == ["b"] and prizes["second"] == ["a"] and prizes["third"] == []
    assert prizes["wh_at_most"] == pytest.approx(1.5 - 0.5)  # over a and b only
    assert prizes["best_accuracy_frugal"] == ["b"] and prizes["least_energy_accurate"] == ["a"]


def _eval_run(root, name, accuracy, source, streaming_j, streaming_s, trace_j):
    """A stored eval run with a meter: its trace runs on past the last answer (meter stop), with more energy."""
    folder = root / name
    folder.mkdir(parents=True)
    summary = {
        "kind": "eval",
        "subsets": {"all": {"device": {"accuracy": accuracy}}},
        "energy": {"source": source, "streaming": {"joules": streaming_j, "seconds": streaming_s}},
    }
    (folder / "summary.json").write_text(json.dumps(summary))
    t = [-1.0, 0.0, streaming_s, streaming_s + 0.5]
    energy = [0.0, 0.1, 0.1 + streaming_j, 0.1 + trace_j]
    pq.write_table(pa.table({"t": t, "energy_j": energy}), folder / "power.parquet")
    # Two samples, both right, answered at a quarter and three quarters of the streaming time.
    samples = {"in_all": [True, True], "label": [1, 0], "device_prediction": [1, 0]}
    pq.write_table(pa.table(samples), folder / "samples.parquet")
    received = {"received_s": [streaming_s / 4, streaming_s * 3 / 4]}
    pq.write_table(pa.table(received), folder / "energy.parquet")
    return folder


def test_lpirc_score_takes_an_eval_runs_streaming_energy_not_the_meters_tail(tmp_path):
    run = _eval_run(tmp_path, "run", 0.8, "sim", streaming_j=3.6, streaming_s=2.0, trace_j=7.2)
    assert score_run(run).wh == pytest.approx(0.001)  # 3.6 J, not the 7.2 J to the trace's end
    half = score_run(run, limit=1.0)
    assert half.wh == pytest.approx(0.0005) and half.accuracy == 0.5
    assert score_run(run, limit=10.0).wh == pytest.approx(0.001)  # the limit past the last answer adds nothing


def test_lpirc_score_refuses_mixed_energy_sources_unless_asked(tmp_path):
    _eval_run(tmp_path, "simulated", 0.8, "sim", 3.6, 2.0, 3.6)
    _eval_run(tmp_path, "measured", 0.7, "device", 3.6, 2.0, 3.6)
    with pytest.raises(UserError, match="different sources"):
        lpirc_scores(["simulated", "measured"], [tmp_path], None, None)
    mixed = lpirc_scores(["simulated", "measured"], [tmp_path], None, None, allow_mixed_sources=True)
    assert mixed["energy_sources"] == ["device", "sim"] and mixed["prizes"]["champion"] == ["simulated"]


def test_lpirc_score_text_output_with_a_run_without_energy(tmp_path):
    _eval_run(tmp_path, "metered", 0.8, "sim", 3.6, 2.0, 3.6)
    _eval_run(tmp_path, "idle", 0.5, "sim", 0.0, 2.0, 0.0)
    done = _harness("lpirc", "score", "metered", "idle", "--results", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "idle: accuracy 0.5000, 0 Wh (sim), score - (no energy) per Wh" in done.stdout
    assert "champion: metered" in done.stdout and "no_energy: idle" in done.stdout


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
        (["lpirc", "score", "no-such-run"], "is not a run folder"),
        (["lpirc", "score", "run", "--time-limit", "-1"], "at least 0"),
        (["lpirc", "score", "run", "--time-limit", "nan"], "at least 0"),
        (["meter", "csv:log.csv", "--seconds", "-1"], "above 0"),
        (["meter", "csv:log.csv", "--seconds", "nan"], "above 0"),
        (["lpirc", "map", "--truth", "binary.csv", "--detections", "binary.csv"], "save it as UTF-8"),
        (["meter", "csv:binary.csv"], "save it as UTF-8"),
    ],
)
def test_bad_meter_and_score_input_is_one_line_and_exit_2(tmp_path, args, message):
    (tmp_path / "binary.csv").write_bytes(b"\xff\xfe\x81\n")
    done = _harness(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_lpirc_score_counts_far_only_images_as_persons_in_distance_far(tmp_path):
    run = _eval_run(tmp_path, "far", 1.0, "sim", 3.6, 2.0, 3.6)
    summary = json.loads((run / "summary.json").read_text())
    summary["subsets"] = {"distance_far": {"device": {"accuracy": 1.0}}}
    (run / "summary.json").write_text(json.dumps(summary))
    samples = {"in_distance_far": [True, True], "label": [-1, 1], "device_prediction": [1, 1]}
    pq.write_table(pa.table(samples), run / "samples.parquet")
    assert score_run(run, "distance_far", limit=10.0).accuracy == 1.0

"""The API's pieces without a board: a figure's comparisons and wording, the settings a caller names, the
scoped quiet switch, and `import harness` handing out the API's names."""

import threading

import pytest

import harness
from harness import console
from harness.api.figures import Figure, explain
from harness.errors import UserError
from harness.eval.settings import EvalSettings

FAR = Figure("device accuracy on distance_far", 0.5, "device (sim)", n=4, ci95=(0.15, 0.85))
NONE = Figure("device accuracy on lighting_dark", None, "device (sim)", n=0, missing="n = 0")


def test_a_figure_compares_with_numbers_and_a_missing_one_fails_every_bound():
    assert FAR >= 0.5 and FAR > 0.4 and FAR <= 0.5 and FAR < 0.6 and not FAR >= 0.8
    assert FAR >= 0.4 and not FAR >= 0.8  # mirrored
    assert not NONE >= 0 and not NONE <= 1
    assert float(FAR) == 0.5
    with pytest.raises(ValueError, match="has no value: n = 0"):
        float(NONE)


def test_a_failed_comparison_says_the_figure_its_interval_and_n():
    assert explain(">=", FAR, 0.8) == [
        "device accuracy on distance_far is not at least 0.8",
        "  device accuracy on distance_far: 0.5 (device (sim), 95 % CI 0.15 to 0.85, n = 4)",
    ]
    assert explain("<=", 0.8, FAR)[0] == "device accuracy on distance_far is not at least 0.8"
    assert explain(">=", NONE, 0.8)[1] == "  device accuracy on lighting_dark: n/a (device (sim); n = 0)"
    assert explain(">=", 1, 2) is None and explain("==", FAR, 0.5) is None


def test_settings_from_keywords_are_checked_as_the_flags_are():
    settings = EvalSettings.from_keywords(limit=5, references=["tflm"], subset="distance_far", seed="3")
    assert (settings.limit, settings.references, settings.subset, settings.seed) == (5, ("tflm",), "distance_far", 3)
    assert EvalSettings.from_keywords(references=[]).references == ()
    with pytest.raises(
        UserError, match=r"^'limit': expected a number of samples: a whole number of at least 1 and at most "
    ):
        EvalSettings.from_keywords(limit=0)
    with pytest.raises(UserError, match=r"^'references': tflm named twice"):
        EvalSettings.from_keywords(references=["tflm", "tflm"])
    with pytest.raises(UserError, match=r"^unknown setting colour; the settings are: board, model, "):
        EvalSettings.from_keywords(colour="red")
    with pytest.raises(UserError, match=r"^'faults': "):
        EvalSettings.from_keywords(faults="drop=2")


def test_quiet_holds_for_the_block_and_the_threads_started_with_its_context():
    import contextvars

    assert not console.is_quiet()
    seen = []
    with console.quieted():
        assert console.is_quiet()
        with console.quieted(False):
            assert not console.is_quiet()
        worker = threading.Thread(
            target=contextvars.copy_context().run, args=(lambda: seen.append(console.is_quiet()),)
        )
        worker.start()
        worker.join()
    assert seen == [True] and not console.is_quiet()


def test_import_harness_hands_out_the_api():
    assert harness.open_board is harness.api.board.open_board
    assert {"open_board", "evaluate", "Figure"} <= set(dir(harness))
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        harness.nosuch  # noqa: B018


def _eval_run(source: str, latency: dict):
    from pathlib import Path

    from harness.api.runs import EvalRun
    from harness.results.runs import Run

    manifest = {"run_id": "r", "started": "2025-01-01T00:00:00", "model": {"card": "vww"}, "board": {"id": "b"}}
    summary = {"subsets": {}, "samples": 10, "latency": {"source": source, **latency}, "arena": {"source": source}}
    return EvalRun(Run(Path("r"), manifest, summary))


def test_latency_comes_in_the_most_exact_figure_the_board_gives():
    qemu = _eval_run("emulated", {"instructions": {"median": 24_500_000}})
    assert (qemu.latency().value, qemu.latency().unit, qemu.latency().source) == (
        24_500_000,
        "instructions",
        "emulated",
    )
    assert qemu.instructions() <= 30_000_000 and not qemu.instructions() <= 20_000_000
    assert qemu.latency().text() == "median instructions per inference: 2.45e+07 instructions (emulated, n = 10)"
    assert not qemu.latency_ms() <= 1e9  # no time on QEMU: missing, and says what the run has
    assert qemu.latency_ms().measured() == "n/a (emulated; no latency in ms (emulated latency: instructions))"

    board = _eval_run("device", {"cycles": {"median": 480_000, "p90": 500_000}, "micros": {"median": 1000.0}})
    assert (board.latency("p90").value, board.latency().unit) == (500_000, "cycles")
    assert board.latency_ms().value == 1.0 and board.cycles().source == "device"
    assert board.instructions().value is None

    sim = _eval_run("sim", {"micros": {"median": 6000.0}})
    assert (sim.latency().value, sim.latency().unit, sim.latency().source) == (6.0, "ms", "sim")

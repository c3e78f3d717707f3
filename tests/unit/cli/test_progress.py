"""Progress as a person sees it: on an 80-column terminal one line with done/total, rate, running accuracy and
ETA, none of them cut; in CI or a log, a line per tenth with the same figures; a build says how many files it
compiles, in the right number."""

import io
import re
from functools import partial

import pytest
from rich.console import Console

from harness import console
from harness.firmware.build_runs import build_heading
from harness.progress_bar import progress_bar


def _bar_at_80_columns(label: str, unit: str, total: int, steps: list[tuple[float, int, list[bool]]]) -> str:
    """The bar's line, rendered at 80 columns after each (time, amount, hits) step of a fake clock."""
    screen = Console(width=80, file=io.StringIO(), force_terminal=True, color_system=None)
    now = [0.0]
    bar = progress_bar(label, partial(console.progress_figures, unit), console=screen, get_time=lambda: now[0])
    task = bar.add_task(label, total=total, hits=0, judged=0)
    hits = judged = 0
    for at, amount, judged_hits in steps:
        now[0] = at
        judged, hits = judged + len(judged_hits), hits + sum(judged_hits)
        bar.update(task, advance=amount, hits=hits, judged=judged)
    screen.print(bar.get_renderable())
    return screen.file.getvalue()


@pytest.mark.parametrize(
    ("label", "unit", "total", "figures"),
    [
        ("eval nucleo_h743", "samples", 1000, r"500/1000 25\.0 samples/s acc 75\.0 % eta 0:00:20$"),
        ("building TFLM for nucleo_h743", "files", 1000, r"500/1000 25\.0 files/s eta 0:00:20$"),
        ("stream qemu_m7", "chunks", 1000, r"500/1000 25\.0 chunks/s eta 0:00:20$"),
    ],
)
def test_the_bar_fits_80_columns_with_rate_accuracy_and_eta_uncut(label, unit, total, figures):
    hits = [True, True, True, False] if unit == "samples" else []
    line = _bar_at_80_columns(label, unit, total, [(10.0, 250, hits), (20.0, 250, hits)])
    (shown,) = line.rstrip("\n").splitlines()
    assert len(shown) <= 80 and "…" not in shown, shown
    assert shown.startswith(label + " ━") and re.search(figures, shown.rstrip()), shown


def test_only_an_overlong_label_gives_way():
    label = "building the TFLM library for a board with a very long name indeed"
    (shown,) = _bar_at_80_columns(label, "files", 317, [(1.0, 10, []), (2.0, 10, [])]).rstrip("\n").splitlines()
    assert len(shown) <= 80 and shown.startswith("building the TFLM") and "… " in shown
    assert re.search(r"20/317 10\.0 files/s eta 0:00:30$", shown.rstrip()), shown


def test_plain_progress_lines_carry_rate_running_accuracy_and_eta(monkeypatch, capsys):
    monkeypatch.setenv("CI", "1")
    with console.progress(10, "eval sim") as advance:
        for index in range(10):
            advance(hit=index % 2 == 0)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 10
    pattern = r"eval sim: 10/10 \(100%\), [\d.]+ samples/s, acc 50\.0 %, eta 0:00:00"
    assert re.fullmatch(pattern, lines[-1]), lines[-1]
    assert re.fullmatch(r"eval sim: 1/10 \(10%\), [\d.]+ samples/s, acc 100\.0 %, eta \d+:\d\d:\d\d", lines[0])


def test_nothing_judged_shows_no_accuracy(monkeypatch, capsys):
    monkeypatch.setenv("CI", "1")
    with console.progress(2, "building TFLM for sim", unit="files") as advance:
        advance()
        advance()
    assert "acc" not in capsys.readouterr().err


def test_a_build_counts_its_files_in_the_right_number_and_promises_no_first_build_for_one():
    assert build_heading("the lib", 1) == "harness: building the lib: 1 source file"
    assert build_heading("the lib", 317).startswith("harness: building the lib: 317 source files (a first build takes ")
    assert "(a first build takes under a minute on " in build_heading("the lib", 2)

"""`harness runs report` in headless Chromium: two eval runs (one with a simulated power meter) and a scored stream
run on the virtual board. Every section is screenshotted; every figure's text must lie inside its figure and
overlap no other text of it."""

import html
import json
import os
import shutil

import numpy as np
import pytest
from PIL import Image

from tests.conftest import SHARED, fixture_model
from tests.model_surgery import swap_output_classes
from tests.report_browser import NEEDS_CHROMIUM, TEXT_PROBLEMS, WRAPPED_INTERVALS, browser_page
from tests.unit.results.test_stream_runs import _harness, _run_id  # one way to run the CLI here

pytestmark = pytest.mark.slow  # runs on the virtual board, made once for the module

AUDIO = SHARED / "fixtures" / "audio"
EVAL = ("eval", "--model", "wv_quality_k_2_c_3", "--subset", "all,distance_far", "--limit", "24", "--quiet")


@pytest.fixture(scope="module")
def report_runs(tmp_path_factory, private_cache):
    """Two eval runs of 24 samples (the small model, and the same model with its classes swapped, metered by
    the WT310 simulator), and an 8 s stream run scored against its ledger."""
    from harness.energy.profile import PowerProfile
    from harness.energy.wt310_sim import Wt310Simulator

    if not (AUDIO / "yes_1000ms.wav").is_file():
        pytest.skip("needs ../shared/fixtures/audio (the TFLM yes/no clips; absent in a fresh clone)")
    small = fixture_model("wake_vision_zoo/wv_quality_k_2_c_3.tflite")
    fixture_model("tflm/audio_preprocessor_int8.tflite")
    folder = tmp_path_factory.mktemp("report-runs")
    swapped = folder / "swapped.tflite"
    swapped.write_bytes(swap_output_classes(small.read_bytes()))
    ids = {"base": _run_id(_harness(folder, *EVAL, "--results", "r"))}
    pulses = tuple((k / 4, k / 4 + 0.1, 0.8) for k in range(400))  # a power trace with something to draw
    with Wt310Simulator(PowerProfile(idle_watts=0.5, volts=5.0, pulses=pulses)) as meter:
        metered = ("--model-file", str(swapped), "--meter", f"wt310:{meter.resource}")
        ids["swapped"] = _run_id(_harness(folder, *EVAL, *metered, "--results", "r"))
    built = _harness(
        folder, "stream", "build", "--clips", str(AUDIO), "--at", "yes:1000,no:3500,yes:6000",
        "--duration-ms", "8000", "--out", "s.wav", "--quiet",
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    ids["stream"] = _run_id(
        _harness(folder, "stream", "run", "--wav", "s.wav", "--ledger", "s.csv", "--results", "r", "--quiet")
    )
    return folder, ids


def _report(folder, tmp_path, *ids, options=()) -> str:
    out = tmp_path / "report.html"
    done = _harness(folder, "runs", "report", *ids, "--results", "r", "--out", str(out), *options)
    assert done.returncode == 0, done.stderr
    return out


def test_two_runs_are_set_side_by_side_with_compares_statistics(report_runs, tmp_path):
    folder, ids = report_runs
    page = html.unescape(_report(folder, tmp_path, ids["base"], ids["swapped"]).read_text())
    compared = json.loads(
        _harness(folder, "runs", "compare", ids["base"], ids["swapped"], "--results", "r", "--json").stdout
    )
    assert "Runs side by side" in page and "McNemar p" in page and "Wilson 95 %" in page
    assert 'data-title="Device latency, run by run (ECDF)"><svg' in page  # drawn, not left to a note
    assert f"{compared['prediction_flips']} device prediction flips" in page
    for name, subset in compared["subsets"].items():
        row = f"<td>{name}</td><td>{subset['n_paired']}</td>"
        assert row in page and f"<td>{subset['mcnemar_p']:.3g}</td>" in page.split(row, 1)[1].split("</tr>")[0]
    assert "<img" not in page and page.count("<svg") >= 8  # inline figures, text as <text>
    assert "µJ per inference (sim)" in page and "seconds from streaming start (sim)" in page  # energy, metered
    assert "ms per inference (sim)" in page and "median" in page and "p95" in page
    assert "not drawn: every sample's largest device - tflm difference is 0 uint8 steps: one bar" in page
    assert "not drawn: too small a share to draw as bars" in page  # the sim's 64 MiB of flash
    assert "F1 (Wake Vision, rate-based): n/a on every subset and source, not drawn" in page


@NEEDS_CHROMIUM
@pytest.mark.parametrize("which", [("base", "swapped"), ("stream",), ("base", "swapped", "stream")])
def test_report_renders_in_chromium_with_every_figures_text_inside_it(report_runs, tmp_path, which):
    folder, ids = report_runs
    out = _report(folder, tmp_path, *(ids[name] for name in which))
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with browser_page() as (page, errors):
        page.goto(out.as_uri())
        page.wait_for_load_state("load")
        problems = page.evaluate(TEXT_PROBLEMS)
        sections = page.locator("section.report-section")
        for k in range(sections.count()):
            sections.nth(k).screenshot(path=str(shots / f"section-{k}.png"))
        drawn = page.locator("figure.plot svg").count()
    assert not errors
    assert not problems, "\n".join(problems)
    pngs = sorted(shots.glob("*.png"))
    assert len(pngs) == len(which) + (2 if len(which) > 1 else 0)  # a section per run, the leaderboard, the pairs
    assert drawn >= 2
    for png in pngs:
        assert np.asarray(Image.open(png).convert("L"), dtype=float).std() > 10, f"{png.name} is blank"
    if os.environ.get("HARNESS_REPORT_SHOTS"):  # to look at them: HARNESS_REPORT_SHOTS=folder
        shutil.copytree(shots, os.path.join(os.environ["HARNESS_REPORT_SHOTS"], "-".join(which)), dirs_exist_ok=True)


GATES = "[accuracy]\nmin = 0.5\n[agreement]\nmin = 0.99\n[f1]\nmin = 0.5\n[arena]\nmax_growth_bytes = 0\n"
SUMMARY_BOX = """() => { const r = document.querySelector('#summary').getBoundingClientRect();
  return [r.top, r.bottom, r.right]; }"""


@NEEDS_CHROMIUM
def test_the_summary_with_the_gates_verdicts_fits_the_first_screen_and_no_interval_wraps(report_runs, tmp_path):
    """At 1280x800 the summary (every run's board, model, accuracy with its interval, ..., gate verdicts) lies
    inside the first screen; the verdicts are `harness runs check`'s; no interval cell runs over two lines."""
    folder, ids = report_runs
    gates = tmp_path / "gates.toml"
    gates.write_text(GATES)
    judged = ("--gates", str(gates), "--baseline", ids["base"])
    out = _report(folder, tmp_path, ids["base"], ids["swapped"], options=judged)
    with browser_page(width=1280, height=800) as (page, errors):
        page.goto(out.as_uri())
        page.wait_for_load_state("load")
        page.screenshot(path=str(tmp_path / "top.png"))  # the first screen only
        top, bottom, right = page.evaluate(SUMMARY_BOX)
        wrapped = page.evaluate(WRAPPED_INTERVALS)
        intervals = page.locator("td.interval").count()
        summary_rows = page.eval_on_selector_all("#summary tr[data-run]", "rows => rows.map(r => r.innerText)")
        plot_width = page.eval_on_selector("figure.plot svg", "svg => svg.getBoundingClientRect().width")
        body_width = page.evaluate("document.querySelector('section.report-section').getBoundingClientRect().width")
        significance = page.eval_on_selector_all(
            "table.paired tr[data-subset] td:last-child", "c => c.map(x => x.textContent)"
        )
        shown = page.eval_on_selector_all("table.gates tr[data-gate]", "rows => rows.map(r => r.innerText)")
    assert not errors
    assert 0 <= top < bottom <= 800 and right <= 1280, (top, bottom, right)
    assert intervals >= 10 and not wrapped, wrapped  # summary, leaderboard, paired and per-subset tables
    assert plot_width >= 0.95 * body_width  # figures use the page's width
    assert significance and set(significance) <= {"yes", "no"}
    assert np.asarray(Image.open(tmp_path / "top.png").convert("L"), dtype=float).std() > 10
    page_text = html.unescape(out.read_text())
    assert "harness compare" not in page_text
    for name, row in zip(("base", "swapped"), summary_rows, strict=True):
        check = _harness(folder, "runs", "check", ids[name], "--results", "r", *judged, "--json")
        verdicts = json.loads(check.stdout)
        assert "sim" in row and "wv_quality_k_2_c_3" in row and "% [" in row and "(host)" in row and "arena" in row
        assert ("FAIL" in row) == (check.returncode == 1) and {v["status"] for v in verdicts} >= {"passed"}
        for verdict in verdicts:  # each run's gates table shows what `runs check` printed, gate by gate
            word = {"passed": "PASS", "failed": "FAIL", "not judged": "NOT JUDGED"}[verdict["status"]]
            assert f"{verdict['name']}\t{word}\t{verdict['detail']}" in shown
    assert len(shown) == 2 * GATES.count("[")


@NEEDS_CHROMIUM
def test_the_text_check_finds_text_outside_its_figure_and_text_overlapping():
    page_html = """<figure class="plot" data-title="bad"><svg width="200" height="100">
      <text x="10" y="50" font-size="20">first label</text><text x="20" y="55" font-size="20">second</text>
      <text x="180" y="50" font-size="20">cut off</text></svg></figure>
      <figure class="plot" data-title="good"><svg width="300" height="100">
      <text x="10" y="30" font-size="12">one</text><text x="10" y="60" font-size="12">two</text></svg></figure>"""
    with browser_page() as (page, _):
        page.set_content(page_html)
        problems = page.evaluate(TEXT_PROBLEMS)
    assert 'bad: "first label" overlaps "second"' in problems
    assert 'bad: "cut off" outside its figure' in problems
    assert not [p for p in problems if p.startswith("good")]


@NEEDS_CHROMIUM
def test_the_wrap_check_finds_an_interval_cell_over_two_lines():
    cells = '<table><tr><td class="interval" style="width: 3em">41.7 (19.3-68.0)</td>'
    cells += '<td class="interval" style="white-space: nowrap">54.2 % [35.1-72.1]</td></tr></table>'
    with browser_page() as (page, _):
        page.set_content(cells)
        assert page.evaluate(WRAPPED_INTERVALS) == ["41.7 (19.3-68.0)"]


def test_cell_text_is_white_on_dark_cells_and_black_on_light_ones():
    from harness.results.plots import text_colour

    assert text_colour("#08306b") == "white"  # the darkest Blues cell: navy
    assert text_colour("#f7fbff") == "black"
    assert text_colour((0.5, 0.5, 0.5)) == "black" and text_colour((0.3, 0.3, 0.3)) == "white"

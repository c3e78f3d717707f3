"""`harness report` in headless Chromium: two eval runs (one with a simulated power meter) and a scored stream
run on the virtual board. Every section is screenshotted; every figure's text must lie inside its figure and
overlap no other text of it."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from tests.conftest import SHARED, fixture_model
from tests.model_surgery import swap_output_classes

pytestmark = pytest.mark.slow  # runs on the virtual board, made once for the module

CHROMIUM = shutil.which("chromium")
AUDIO = SHARED / "fixtures" / "audio"
EVAL = ("eval", "--model", "wv_quality_k_2_c_3", "--subset", "all,distance_far", "--limit", "24", "--quiet")

# For every <svg> in a figure: text boxes outside the figure, and pairs of text boxes that overlap (by more
# than half a pixel each way: glyphs of neighbouring labels may touch).
TEXT_PROBLEMS = """() => {
  const problems = [];
  for (const figure of document.querySelectorAll('figure.plot')) {
    const svg = figure.querySelector('svg');
    if (!svg) continue;
    const frame = svg.getBoundingClientRect();
    const title = figure.dataset.title;
    const boxes = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim())
      .map(t => [t.textContent.trim(), t.getBoundingClientRect()]);
    for (const [text, r] of boxes) {
      if (r.left < frame.left - 0.5 || r.right > frame.right + 0.5 || r.top < frame.top - 0.5 || r.bottom > frame.bottom + 0.5)
        problems.push(`${title}: "${text}" outside its figure`);
    }
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, ra] = boxes[i], [b, rb] = boxes[j];
      const dx = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
      const dy = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
      if (dx > 0.5 && dy > 0.5) problems.push(`${title}: "${a}" overlaps "${b}"`);
    }
  }
  return problems;
}"""


def _harness(*args, cwd):
    command = [sys.executable, "-m", "harness", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=os.environ.copy())


def _run_id(done) -> str:
    assert done.returncode == 0, done.stderr
    return os.path.basename(done.stdout.strip())


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
    ids = {"base": _run_id(_harness(*EVAL, "--results", "r", cwd=folder))}
    with Wt310Simulator(PowerProfile(idle_watts=0.5, volts=5.0)) as meter:
        metered = ("--model-file", str(swapped), "--meter", f"wt310:{meter.resource}")
        ids["swapped"] = _run_id(_harness(*EVAL, *metered, "--results", "r", cwd=folder))
    built = _harness(
        "stream", "build", "--clips", str(AUDIO), "--at", "yes:1000,no:3500,yes:6000",
        "--duration-ms", "8000", "--out", "s.wav", "--quiet", cwd=folder,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    ids["stream"] = _run_id(
        _harness("stream", "--wav", "s.wav", "--ledger", "s.csv", "--results", "r", "--quiet", cwd=folder)
    )
    return folder, ids


def _report(folder, tmp_path, *ids) -> str:
    out = tmp_path / "report.html"
    done = _harness("report", *ids, "--results", "r", "--out", str(out), cwd=folder)
    assert done.returncode == 0, done.stderr
    return out


def test_two_runs_are_set_side_by_side_with_compares_statistics(report_runs, tmp_path):
    folder, ids = report_runs
    page = _report(folder, tmp_path, ids["base"], ids["swapped"]).read_text()
    compared = json.loads(
        _harness("compare", ids["base"], ids["swapped"], "--results", "r", "--json", cwd=folder).stdout
    )
    assert "Runs side by side" in page and "McNemar p" in page and "Wilson 95 %" in page
    assert f"{compared['prediction_flips']} device prediction flips" in page
    for name, subset in compared["subsets"].items():
        row = f"<td>{name}</td><td>{subset['n_paired']}</td>"
        assert row in page and f"<td>{subset['mcnemar_p']:.3g}</td>" in page.split(row, 1)[1].split("</tr>")[0]
    assert "<img" not in page and page.count("<svg") >= 8  # inline figures, text as <text>
    assert "µJ per inference (sim)" in page  # the metered run's energy figure
    assert "ms per inference (sim)" in page and "median" in page and "p95" in page


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (scripts/install --test installs it as root)")
@pytest.mark.parametrize("which", [("base", "swapped"), ("stream",), ("base", "swapped", "stream")])
def test_report_renders_in_chromium_with_every_figures_text_inside_it(report_runs, tmp_path, which):
    playwright = pytest.importorskip("playwright.sync_api", reason="needs the playwright package (test extras)")
    folder, ids = report_runs
    out = _report(folder, tmp_path, *(ids[name] for name in which))
    shots = tmp_path / "screenshots"
    shots.mkdir()
    errors = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(out.as_uri())
        page.wait_for_load_state("load")
        problems = page.evaluate(TEXT_PROBLEMS)
        sections = page.locator("section.report-section")
        for k in range(sections.count()):
            sections.nth(k).screenshot(path=str(shots / f"section-{k}.png"))
        drawn = page.locator("figure.plot svg").count()
        browser.close()
    assert not errors
    assert not problems, "\n".join(problems)
    pngs = sorted(shots.glob("*.png"))
    assert len(pngs) == len(which) + (2 if len(which) > 1 else 0)  # a section per run, the leaderboard, the pairs
    assert drawn >= 2
    for png in pngs:
        assert np.asarray(Image.open(png).convert("L"), dtype=float).std() > 10, f"{png.name} is blank"
    if os.environ.get("HARNESS_REPORT_SHOTS"):  # to look at them: HARNESS_REPORT_SHOTS=folder
        shutil.copytree(shots, os.path.join(os.environ["HARNESS_REPORT_SHOTS"], "-".join(which)), dirs_exist_ok=True)

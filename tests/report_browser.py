"""The report in headless Chromium (Debian's /usr/bin/chromium, driven by playwright): a page opened with its
console errors collected, and the check that every figure's text stays inside its figure, overlapping no other."""

import shutil
from contextlib import contextmanager

import pytest

CHROMIUM = shutil.which("chromium")
NEEDS_CHROMIUM = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium (scripts/install --test installs it as root)"
)

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
    const out = r => r.left < frame.left - 0.5 || r.right > frame.right + 0.5
      || r.top < frame.top - 0.5 || r.bottom > frame.bottom + 0.5;
    for (const [text, r] of boxes) {
      if (out(r))
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


# Cells holding an interval whose text runs over more than one line ("41.7 (19.3-⏎68.0)"): their texts.
WRAPPED_INTERVALS = """() => [...document.querySelectorAll('td.interval')].filter(cell => {
  const range = document.createRange();
  range.selectNodeContents(cell);
  const rects = [...range.getClientRects()].filter(r => r.width > 0);
  return new Set(rects.map(r => Math.round(r.top))).size > 1;
}).map(cell => cell.textContent)"""


@contextmanager
def browser_page(width: int = 1200, height: int = 900):
    """A page in headless Chromium and the list its console and page errors go to."""
    playwright = pytest.importorskip("playwright.sync_api", reason="needs the playwright package (test extras)")
    errors = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        page = browser.new_page(viewport={"width": width, "height": height})
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            yield page, errors
        finally:
            browser.close()

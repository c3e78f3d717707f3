"""One comparison per pair of runs: the report's side-by-side view shows the figures `harness runs compare --json`
gives, the leaderboard keeps runs of different subsets and selections apart (the newest per key, the earlier ones
under it), runs with nothing in common say so in one line, and a made-up dataset says what it is. On crafted run
folders: no board, no model."""

import io
import json
from html.parser import HTMLParser

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console

from harness.api.runs import view
from harness.cli import exits
from harness.cli.app import main
from harness.results.comparison import PairedSubset, mcnemar_exact
from harness.results.cross_run import leaderboard
from harness.results.html_report import render
from harness.results.intervals import wilson_interval
from harness.results.record import parse_summary
from harness.results.report import summary_tables
from harness.results.runs import load_run

DEMO = "demo (demo-v2)"
SYNTHETIC = "synthetic images, not Wake Vision"


def _write_run(root, run_id, rows, subsets, *, board="sim", started="2025-01-01T00:00:00", limit=None, seed=0,
               dataset=DEMO, synthetic=SYNTHETIC, source="sim"):  # fmt: skip
    """A run folder whose summary scores each subset over its members of `rows` ({sample id: (label, prediction)}):
    its own accuracy and Wilson interval, as an eval run scores them."""
    ids = list(rows)
    scored = {}
    for name, members in subsets.items():
        right = sum(rows[sid][0] == rows[sid][1] for sid in members)
        scored[name] = {
            "n": len(members),
            "device": {
                "accuracy": right / len(members) if members else None,
                "accuracy_ci95": wilson_interval(right, len(members)),
            },
        }
    manifest = {
        "run_id": run_id,
        "started": started,
        "model": {"card": "vww", "sha256": "ab" * 32, "output": "int8[1, 2]"},
        "board": {"id": board, "latency_source": source},
        "device": {},
        "dataset": {"name": dataset, "subsets": list(subsets), "limit": limit, "order": "sampled", "seed": seed},
    }
    summary = {
        "model": "vww",
        "board": board,
        "dataset": dataset,
        "synthetic": synthetic,
        "samples": len(ids),
        "subsets": scored,
        "latency": {"source": source, "micros": {"median": 6000.0}},
        "arena": {"source": source, "used": 1000},
    }
    folder = root / run_id
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "summary.json").write_text(json.dumps(summary))
    samples = {
        "sample_id": ids,
        "label": [rows[sid][0] for sid in ids],
        "device_prediction": [rows[sid][1] for sid in ids],
        "microseconds": [6000.0 + k for k in range(len(ids))],
    } | {f"in_{name}": [sid in members for sid in ids] for name, members in subsets.items()}
    pq.write_table(pa.table(samples), folder / "samples.parquet")
    return run_id


class _Page(HTMLParser):
    """The report's cells: each table row's text cells by its class/data attributes, paragraphs by class."""

    def __init__(self):
        super().__init__()
        self.rows, self.paragraphs, self.tables, self.details = [], [], [], []
        self._row = self._cell = self._p = None
        self._details = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.tables.append(attrs.get("class"))
        elif tag == "tr":
            self._row = {"attrs": attrs, "cells": [], "table": self.tables[-1] if self.tables else None}
        elif tag in ("td", "th") and self._row is not None:
            self._cell = ""
        elif tag == "p":
            self._p = (attrs.get("class"), [])
        elif tag == "details":
            self._details = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row["cells"].append(self._cell.strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        elif tag == "p" and self._p is not None:
            self.paragraphs.append((self._p[0], "".join(self._p[1]).strip()))
            self._p = None
        elif tag == "details":
            self.details.append("".join(self._details))
            self._details = None

    def handle_data(self, data):
        if self._details is not None:
            self._details.append(data)
        if self._cell is not None and self._details is None:
            self._cell += data
        if self._p is not None:
            self._p[1].append(data)


@pytest.fixture
def no_plots(monkeypatch):
    """The report without its figures (drawn and tested elsewhere): its tables and lines in a fraction of the time."""
    from harness.results import cross_run, html_report

    monkeypatch.setattr(html_report, "_figures", lambda run: [])
    monkeypatch.setattr(cross_run, "side_by_side", lambda runs: [])


def _page(runs) -> _Page:
    page = _Page()
    page.feed(render(runs))
    return page


def _compare_json(capsys, root, a, b) -> dict:
    assert main(["runs", "compare", a, b, "--results", str(root), "--json"]) == exits.OK
    return json.loads(capsys.readouterr().out)


def _interval(accuracy, ci) -> str:
    return f"{100 * accuracy:.1f} % [{100 * ci[0]:.1f}-{100 * ci[1]:.1f}]"


@pytest.fixture
def overlapping(tmp_path):
    """A of 24 samples, B of 15 of them and 3 of its own: each run's own accuracy differs from its accuracy over
    the 15 paired samples (the issue's 41.7 % against 33.3 % on one pair)."""
    a_rows = {f"s{k}": (1, 1 if k % 3 else 0) for k in range(24)}
    b_rows = {f"s{k}": (1, 1 if k % 2 else 0) for k in range(15)} | {f"x{k}": (0, 0) for k in range(3)}
    far = {f"s{k}" for k in range(0, 24, 2)}
    a = _write_run(tmp_path, "a-run", a_rows, {"all": set(a_rows), "distance_far": far}, limit=24)
    b_subsets = {"all": set(b_rows), "distance_far": far & set(b_rows)}
    b = _write_run(tmp_path, "b-run", b_rows, b_subsets, started="2025-01-02T00:00:00", limit=12)
    return tmp_path, a, b


def test_every_paired_figure_of_the_report_is_compares(overlapping, capsys):
    root, a, b = overlapping
    compared = _compare_json(capsys, root, a, b)
    runs = [load_run(a, root), load_run(b, root)]
    page = _page(runs)
    rows = {row["attrs"]["data-subset"]: row["cells"] for row in page.rows if "data-subset" in row["attrs"]}
    assert compared["paired_samples"] == 15 and set(rows) == set(compared["subsets"]) == {"all", "distance_far"}
    for name, s in compared["subsets"].items():
        cells = rows[name]
        assert cells[0] == name and cells[1] == str(s["n_paired"])
        assert cells[2] == _interval(s["accuracy_a"], s["accuracy_ci95_a"])
        assert cells[3] == _interval(s["accuracy_b"], s["accuracy_ci95_b"])
        assert cells[4] == f"{100 * s['delta']:+.1f}"
        assert cells[5:8] == [str(s["only_a_correct"]), str(s["only_b_correct"]), f"{s['mcnemar_p']:.3g}"]
        assert cells[8] == ("yes" if s["significant"] else "no")  # never blank
    # the pair's figures are not the runs' own: A scores 24 samples of all, the pair 15
    own = runs[0].eval_summary.subsets["all"].device.accuracy
    assert rows["all"][2] != _interval(own, runs[0].eval_summary.subsets["all"].device.accuracy_ci95)
    headline = f"{compared['paired_samples']} paired samples, {compared['prediction_flips']} device prediction flips"
    assert any(text.startswith(headline) for _, text in page.paragraphs)


def test_the_pairing_counts_each_subsets_paired_samples(overlapping):
    root, a, b = overlapping
    from harness.results.compare import compare_runs

    result = compare_runs(load_run(a, root), load_run(b, root))
    far = result.subsets["distance_far"]
    # s0, s2, …, s14 are in both runs' distance_far: A is right on those not divisible by 3, B on the odd ones
    a_ok = [k % 3 != 0 for k in range(0, 15, 2)]
    assert far.n_paired == 8 and far.accuracy_a == sum(a_ok) / 8 and far.accuracy_b == 0.0
    assert far.mcnemar_p == mcnemar_exact(*map(_array, (a_ok, [False] * 8)))[2]
    assert far == PairedSubset.of(_array(a_ok), _array([False] * 8))
    assert result.apart is None and json.dumps(result.as_json())  # the --json form is JSON


def _array(values):
    import numpy as np

    return np.array(values, dtype=bool)


def test_runs_with_no_subset_in_common_say_so_in_one_line(tmp_path, capsys, no_plots):
    rows = {f"s{k}": (1, k % 2) for k in range(10)}
    a = _write_run(tmp_path, "a-run", rows, {"all": set(rows)})
    b = _write_run(tmp_path, "b-run", rows, {"distance_far": {"s1", "s2"}}, started="2025-01-02T00:00:00")
    line = "no subset in common (a-run: all; b-run: distance_far): no accuracy to compare"
    assert _compare_json(capsys, tmp_path, a, b)["apart"] == line
    assert main(["runs", "compare", a, b, "--results", str(tmp_path)]) == exits.OK
    text = capsys.readouterr().out
    assert text.count(line) == 1 and "McNemar" not in text and "device accuracy on the paired" not in text
    page = _page([load_run(a, tmp_path), load_run(b, tmp_path)])
    assert [text for kind, text in page.paragraphs if kind == "note apart"] == [f"accuracy: {line}"]
    assert "paired" not in page.tables  # no table of headers alone
    latency = next(text for _, text in page.paragraphs if text.startswith("Latency"))
    assert ": ;" not in latency


def test_runs_sharing_subsets_but_no_samples_in_them_say_so(tmp_path, capsys):
    rows = {f"s{k}": (1, 1) for k in range(6)}
    a = _write_run(tmp_path, "a-run", rows, {"distance_far": {"s0", "s1"}})
    b = _write_run(tmp_path, "b-run", rows, {"distance_far": {"s4", "s5"}})
    compared = _compare_json(capsys, tmp_path, a, b)
    assert compared["apart"] == "no sample scored in distance_far by both runs: no accuracy to compare"
    assert compared["subsets"]["distance_far"]["n_paired"] == 0


def test_the_leaderboard_keeps_subsets_and_selections_apart_and_the_newest_per_key(tmp_path, no_plots):
    rows = {f"s{k}": (1, k % 2) for k in range(24)}
    few = {sid: rows[sid] for sid in list(rows)[:12]}
    made = [
        _write_run(tmp_path, "old-all-24", rows, {"all": set(rows)}, started="2025-01-01T00:00:00", limit=24),
        _write_run(tmp_path, "new-all-24", rows, {"all": set(rows)}, started="2025-01-03T00:00:00", limit=24),
        _write_run(tmp_path, "all-12", few, {"all": set(few)}, started="2025-01-04T00:00:00", limit=12),
        _write_run(tmp_path, "far-seed-1", rows, {"distance_far": set(rows)}, limit=24, seed=1, board="qemu"),
    ]
    runs = [load_run(run_id, tmp_path) for run_id in made]
    board = {(r.board, r.subset, r.selection): r for r in leaderboard(runs)}
    assert set(board) == {
        ("sim", "all", "24 per subset, drawn with seed 0"),
        ("sim", "all", "12 per subset, drawn with seed 0"),
        ("qemu", "distance_far", "24 per subset, drawn with seed 1"),
    }
    kept = board[("sim", "all", "24 per subset, drawn with seed 0")]
    assert kept.newest.run.id == "new-all-24" and [s.run.id for s in kept.earlier] == ["old-all-24"]
    assert board[("sim", "all", "12 per subset, drawn with seed 0")].newest.n == 12
    assert all(row.dataset == f"{DEMO}: {SYNTHETIC}" for row in board.values())
    page = _page(runs)
    listed = [row["cells"] for row in page.rows if row["table"] == "leaderboard"][1:]
    assert len(listed) == 3 and {cells[8].split()[0] for cells in listed} == {"new-all-24", "all-12", "far-seed-1"}
    assert len(page.details) == 1 and "old-all-24" in page.details[0] and "n = 24" in page.details[0]


def test_a_made_up_dataset_says_what_it_is_in_every_view(overlapping, no_plots):
    root, a, b = overlapping
    run = load_run(a, root)
    summary = run.eval_summary
    assert json.loads((root / a / "summary.json").read_text())["synthetic"] == SYNTHETIC
    screen = Console(width=80, file=io.StringIO(), record=True, color_system=None)
    for table in summary_tables(summary):
        screen.print(table)
    assert SYNTHETIC in " ".join(screen.export_text().split())  # the title, however it wraps
    page = _page([run, load_run(b, root)])
    assert f"{DEMO}: {SYNTHETIC}: a made-up dataset" in [text for _, text in page.paragraphs][1]  # the header
    assert f"on {DEMO}: {SYNTHETIC}" in view(run).accuracy("all").text()
    real = parse_summary(dict(run.summary, dataset="wake-vision (test)", synthetic=None))
    assert real.dataset_label == "wake-vision (test)"


def test_a_run_of_an_earlier_version_without_the_field_still_reads(tmp_path, no_plots):
    rows = {"s0": (1, 1), "s1": (0, 1)}
    run_id = _write_run(tmp_path, "old", rows, {"all": set(rows)}, dataset="mine", synthetic=None)
    summary = json.loads((tmp_path / run_id / "summary.json").read_text())
    del summary["synthetic"]
    (tmp_path / run_id / "summary.json").write_text(json.dumps(summary))
    run = load_run(run_id, tmp_path)
    assert run.eval_summary.synthetic is None and "made-up" not in render([run])
    assert "on " not in view(run).accuracy("all").measured()


def test_the_summary_on_top_shows_each_runs_figures_as_runs_lists_them_and_checks_verdicts(overlapping, no_plots):
    """A row per run before any other table: the first subset's n and accuracy with its interval (the figures the
    leaderboard and `harness runs` show), agreement, latency and footprint with their sources, and the gates."""
    from harness.eval.subsets import judge_gates
    from harness.results.cross_run import accuracy_interval
    from harness.results.glance import gated

    root, a, b = overlapping
    runs = [load_run(a, root), load_run(b, root)]
    gates = {"accuracy": {"min": 0.6}, "arena": {"max_growth_bytes": 0}}
    verdicts = gated(runs, lambda run: judge_gates(run, gates, runs[0]))
    page = _Page()
    page.feed(render(runs, verdicts, runs[0]))
    summary = [row for row in page.rows if "data-run" in row["attrs"]]
    assert page.rows.index(summary[0]) == 1  # right under the summary's header row: the page's first table
    for run, row in zip(runs, summary, strict=True):
        cells = dict(zip(page.rows[0]["cells"], row["cells"], strict=True))
        first = run.eval_summary.subsets["all"]
        assert cells["subset"].startswith("all") and cells["n"] == str(first.n)
        assert cells["device accuracy % [Wilson 95 %]"] == accuracy_interval(run, "all")
        assert cells["latency (median)"].endswith(f"({run.eval_summary.latency.source})")
        assert cells["footprint"].startswith(f"arena {run.eval_summary.arena.used:,} B (sim)")
        assert run.primary_reference is None and cells["agreement with the host"] == "n/a"  # these runs have no host
        results = judge_gates(run, gates, runs[0])
        failed = [r.name for r in results if r.status == "failed"]
        assert cells["gates"].startswith("FAIL" if failed else "PASS") and all(
            name in cells["gates"] for name in failed
        )
        shown = {r["attrs"]["data-gate"]: r["cells"][1] for r in page.rows if r["attrs"].get("data-gate")}
        assert set(shown) == set(gates)
    assert not gated(runs, lambda run: [])[a].results  # nothing judged when there is nothing to judge

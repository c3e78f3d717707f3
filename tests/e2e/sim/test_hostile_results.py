"""Hostile run folders, gates files and report outputs (issue #31, results): every file of a run folder in every
hostile form, every figure out of its range, through `runs list`, `runs report`, `runs compare` and `runs check`.

One real eval run on the virtual board is made once; each case copies it to results/run, makes one of its files
hostile and runs a command. `runs report`, `runs compare` and `runs check` refuse the run in one line naming the
run, the file and (for a figure) the field, exit 2, leaving every file as it was; `runs list` lists the good run
and the damaged one as damaged, with its file and field (never dropped, never listed as valid)."""

import json
import os
import shutil
import stat
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.hostile import NOT_A_FILE, NOT_JSON, NOT_TEXT, NOT_TOML, Case, make_files, run_case, run_harness, tree

RUN = "run"  # the hostile copy's folder under results/
GOOD = "good"  # the untouched copy's


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """A small finished eval run of the default model (4 samples)."""
    folder = tmp_path_factory.mktemp("made")
    done = run_harness(folder, "eval", "--limit", "4", "--results", "results", "--quiet")
    assert done.returncode == 0, done.stderr
    return folder / done.stdout.strip()


def _workspace(root: Path, made: Path) -> Path:
    """root/results holding two copies of the made run (good, run) and root/gates.toml."""
    results = root / "results"
    results.mkdir()
    for name in (GOOD, RUN):
        shutil.copytree(made, results / name)
        _rename(results / name)
    (root / "gates.toml").write_text("[accuracy]\nmin = 0.1\n")
    return results


def _renamed(data: dict, run_id: str) -> dict:
    """A record's JSON with its run id that of the folder it is copied to (a run's id is its folder's name)."""
    return dict(data, run_id=run_id) if "run_id" in data else data


def _rename(folder: Path) -> None:
    for name in ("manifest.json", "summary.json"):
        path = folder / name
        path.write_text(json.dumps(_renamed(json.loads(path.read_text()), folder.name)))


COMMANDS = {  # the commands that read one run, and refuse a damaged one
    "report": ("runs", "report", RUN, "--out", "report.html", "--results", "results"),
    "compare": ("runs", "compare", GOOD, RUN, "--results", "results"),
    "check": ("runs", "check", RUN, "--gates", "gates.toml", "--results", "results"),
}


# ---------------------------------------------------------------- the run's files in every hostile form


def _parquet(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def _samples_of(made: Path, change) -> bytes:
    return _parquet(change(pq.read_table(made / "samples.parquet")))


def _relabelled(table: pa.Table) -> pa.Table:
    index = table.schema.get_field_index("label")
    return table.set_column(index, "label", pa.array([f"class{i}" for i in range(table.num_rows)]))


NOT_SAMPLES = {  # samples.parquet that is not this run's table: (change of the real one, the words)
    "another-schema": (lambda t: pa.table({"x": [1, 2]}), ("no column 'sample_id'",)),
    "zero-rows": (lambda t: t.slice(0, 0), ("no rows", "4 samples")),
    "string-labels": (_relabelled, ("column 'label'", "not whole numbers")),
    "no-predictions": (lambda t: t.drop_columns(["device_prediction"]), ("no column 'device_prediction'",)),
    "no-latency": (lambda t: t.drop_columns(["microseconds"]), ("no column 'microseconds'",)),
    "random-bytes": (lambda t: None, ("not a Parquet file",)),
    "label-not-a-class": (lambda t: _column("label", [0, 1, 7, 1])(t), ("column 'label'", "class 7")),
    "prediction-negative": (lambda t: _column("device_prediction", [0, -1, 0, 1])(t), ("'device_prediction'",)),
    "score-nan": (lambda t: _column("device_score", [0.5, float("nan"), 0.5, 0.5])(t), ("'device_score'",)),
    "sample-id-newline": (lambda t: _column("sample_id", ["a", "b\nc", "d", "e"])(t), ("control",)),
    "sample-id-null": (lambda t: _column("sample_id", ["a", None, "d", "e"])(t), ("'sample_id'", "null")),
    "tick-hz-0": (lambda t: _column("tick_hz", [0, 0, 0, 0])(t), ("'tick_hz'",)),
}


def _form_cases(made: Path):
    """(id, file, content, words) for each run file in each hostile form."""
    forms = {**NOT_A_FILE, **NOT_TEXT, **NOT_JSON}
    for name in ("manifest.json", "summary.json"):
        for form, (content, words) in forms.items():
            yield f"{name}-{form}", name, content, tuple(w.format(name=name) for w in words)
    for form, (content, words) in NOT_A_FILE.items():
        yield f"samples-{form}", "samples.parquet", content, tuple(w.format(name="samples.parquet") for w in words)
    for form, (change, words) in NOT_SAMPLES.items():
        content = os.urandom(4096) if form == "random-bytes" else _samples_of(made, change)
        yield f"samples-{form}", "samples.parquet", content, ("samples.parquet", *words)


# ---------------------------------------------------------------- figures out of range, wrong types


def _set(path: tuple, value):
    """A change of a stored JSON object: the value at `path` (keys) set to `value`."""

    def change(data: dict) -> dict:
        inner = data
        for key in path[:-1]:
            inner = inner[key]
        inner[path[-1]] = value
        return data

    return change


DEVICE = ("subsets", "all", "device")
FIGURES = {  # case: (file, change, the words: the field it names, what it holds)
    "accuracy-5": ("summary.json", _set((*DEVICE, "accuracy"), 5.0), ("subsets.all.device.accuracy", "5.0")),
    "accuracy-negative": ("summary.json", _set((*DEVICE, "accuracy"), -0.25), ("device.accuracy", "-0.25")),
    "accuracy-text": ("summary.json", _set((*DEVICE, "accuracy"), "0.75"), ("device.accuracy", "'0.75'")),
    "accuracy-bool": ("summary.json", _set((*DEVICE, "accuracy"), True), ("device.accuracy", "True")),
    "ci-above-1": ("summary.json", _set((*DEVICE, "accuracy_ci95"), [0.2, 2.0]), ("accuracy_ci95", "2.0")),
    "f1-above-1": ("summary.json", _set((*DEVICE, "f1_counts"), 1.5), ("device.f1_counts", "1.5")),
    "tp-fraction": ("summary.json", _set((*DEVICE, "tp"), 1.5), ("device.tp", "1.5")),
    "tp-negative": ("summary.json", _set((*DEVICE, "tp"), -1), ("device.tp", "-1")),
    "n-negative": ("summary.json", _set(("subsets", "all", "n"), -3), ("subsets.all.n", "-3")),
    "samples-negative": ("summary.json", _set(("samples",), -4), ("'samples'", "-4")),
    "agreement-2": (
        "summary.json",
        _set(("subsets", "all", "versus", "tflm", "agreement"), 2.0),
        ("versus.tflm.agreement", "2.0"),
    ),
    "host-accuracy-5": (
        "summary.json",
        _set(("subsets", "all", "host", "tflm", "accuracy"), 5.0),
        ("host.tflm.accuracy", "5.0"),
    ),
    "arena-negative": ("summary.json", _set(("arena", "used"), -1), ("arena.used", "-1")),
    "latency-negative": ("summary.json", _set(("latency", "micros", "median"), -5.0), ("micros.median", "-5.0")),
    "latency-text": ("summary.json", _set(("latency", "micros", "median"), "fast"), ("micros.median", "'fast'")),
    "bit-exact-negative": ("summary.json", _set(("bit_exact", "tflm"), -2), ("bit_exact.tflm", "-2")),
    "subsets-list": ("summary.json", _set(("subsets",), [1, 2]), ("'subsets'",)),
    "summary-kind-list": ("summary.json", _set(("kind",), ["eval"]), ("'kind'", "['eval']")),
    "summary-of-a-stream-run": ("summary.json", _set(("kind",), "stream"), ("'audio' is missing",)),
    "manifest-board-5": ("manifest.json", _set(("board",), 5), ("'board'", "5")),
    "manifest-kind-list": ("manifest.json", _set(("kind",), ["eval"]), ("'kind'", "['eval']")),
    "manifest-kind-number": ("manifest.json", _set(("kind",), 5), ("'kind'", "5")),
    "manifest-run-id-number": ("manifest.json", _set(("run_id",), 5), ("'run_id'", "5")),
    "manifest-model-bytes-negative": ("manifest.json", _set(("model", "bytes"), -1), ("model.bytes", "-1")),
    "manifest-no-model": ("manifest.json", lambda d: {k: v for k, v in d.items() if k != "model"}, ("'model'",)),
    # issue #31's record review: unknown keys, free-form parts, ids and text, figures that disagree
    "summary-unknown-key": ("summary.json", _set(("acuracy",), 0.9), ("'acuracy'", "unexpected")),
    "manifest-unknown-key": ("manifest.json", _set(("finshed",), "x"), ("'finshed'", "unexpected")),
    "link-resends-negative": ("summary.json", _set(("link", "resends"), -1), ("'link'", "resends")),
    "timer-hz-0": ("manifest.json", _set(("device", "timer", "hz"), 0), ("device.timer.hz", "0")),
    "model-sha256-short": ("manifest.json", _set(("model", "sha256"), "abc"), ("model.sha256", "SHA-256")),
    "started-not-a-time": ("manifest.json", _set(("started",), "yesterday"), ("'started'", "ISO 8601")),
    "finished-before-started": ("manifest.json", _set(("finished",), "2000-01-01T00:00:00Z"), ("before",)),
    "run-id-escaping": ("manifest.json", _set(("run_id",), "../../x"), ("'run_id'", "not an id")),
    "board-not-an-id": ("manifest.json", _set(("board", "id"), "../x"), ("board.id", "not an id")),
    "subset-name-control": ("summary.json", lambda d: _subset_renamed(d, "all\u202e"), ("control",)),
    "accuracy-outside-ci": ("summary.json", _set((*DEVICE, "accuracy_ci95"), [0.0, 0.0]), ("accuracy_ci95",)),
    "tp-above-n": ("summary.json", _set((*DEVICE, "tp"), 99), ("device.tp", "more than")),
    "bit-exact-above-samples": ("summary.json", _set(("bit_exact", "tflm"), 99), ("bit_exact.tflm", "more than")),
    "samples-huge": ("summary.json", _set(("samples",), 2**41), ("'samples'",)),
    "accuracy-null-finished": ("summary.json", _set((*DEVICE, "accuracy"), None), ("never scored",)),
}


def _subset_renamed(summary: dict, name: str) -> dict:
    return dict(summary, subsets={name: summary["subsets"]["all"]})


def _figure_content(made: Path, name: str, change) -> bytes:
    return json.dumps(change(_renamed(json.loads((made / name).read_text()), RUN))).encode()


# The NaN figures the issue found passing `runs check`: JSON's NaN is refused as it is read, naming its field.
NAN_FIGURES = {
    "accuracy-nan": (*DEVICE, "accuracy"),
    "accuracy-drop-nan": ("subsets", "all", "host", "tflm", "accuracy"),
    "latency-median-nan": ("latency", "micros", "median"),
    "agreement-nan": ("subsets", "all", "versus", "tflm", "agreement"),
}


def _cases(made: Path) -> dict[str, tuple[str, object, tuple[str, ...]]]:
    """case id -> (the run file, its hostile content, the words naming what is wrong)."""
    cases = {case: (name, content, words) for case, name, content, words in _form_cases(made)}
    for case, (name, change, words) in FIGURES.items():
        cases[case] = (name, _figure_content(made, name, change), (name, "is damaged", *words))
    for case, path in NAN_FIGURES.items():
        words = (f"field {'.'.join(path)!r} is nan, not a finite number",)
        cases[case] = ("summary.json", _figure_content(made, "summary.json", _set(path, float("nan"))), words)
    twice = _figure_content(made, "summary.json", lambda d: d).replace(b"{", b'{"samples": 4, ', 1)
    cases["duplicate-key"] = ("summary.json", twice, ("summary.json", "key 'samples' twice in one object"))
    return cases


CASE_IDS = [
    *(
        f"{name}-{form}"
        for name in ("manifest.json", "summary.json")
        for form in {**NOT_A_FILE, **NOT_TEXT, **NOT_JSON}
    ),
    *(f"samples-{form}" for form in {**NOT_A_FILE, **NOT_SAMPLES}),
    *FIGURES,
    *NAN_FIGURES,
    "duplicate-key",
]


@pytest.fixture(scope="module")
def cases(made):
    built = _cases(made)
    assert sorted(built) == sorted(CASE_IDS)
    return built


def _hostile(root: Path, made: Path, name: str, content) -> None:
    """The workspace with results/run/<name> replaced by content (a FIFO, a link, a folder or bytes)."""
    results = _workspace(root, made)
    (results / RUN / name).unlink()
    make_files(root, {f"results/{RUN}/{name}": content})


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", CASE_IDS)
def test_a_hostile_run_file_is_refused_naming_it(tmp_path, made, cases, case, command):
    name, content, words = cases[case]
    _hostile(tmp_path, made, name, content)
    run_case(tmp_path, Case(f"{command}-{case}", COMMANDS[command], (RUN, name, *words)))


@pytest.mark.parametrize("case", CASE_IDS)
def test_runs_list_lists_the_hostile_run_as_damaged_and_the_good_one(tmp_path, made, cases, case):
    name, content, words = cases[case]
    _hostile(tmp_path, made, name, content)
    before = tree(tmp_path)
    done = run_harness(tmp_path, "runs", "list", "--results", "results", "--json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    rows = {row["run_id"]: row["damaged"] for row in json.loads(done.stdout)}
    assert rows.keys() == {GOOD, RUN} and rows[GOOD] is None
    reason = rows[RUN]
    assert f"results/{RUN}" in reason and all(word in reason for word in (name, *words)), reason
    (line,) = done.stderr.strip().splitlines()
    assert "listed as damaged" in line and reason in line, line
    assert tree(tmp_path) == before


def _column(name: str, values):
    def change(table: pa.Table) -> pa.Table:
        index = table.schema.get_field_index(name)
        return table.set_column(index, table.schema.field(index), pa.array(values, table.schema.field(index).type))

    return change


SAMPLE_VALUES = {  # rows compare and the report read: (change of the real table, the words)
    "latency-nan": (_column("microseconds", [1.0, float("nan"), 1.0, 1.0]), ("'microseconds'", "nan", "row 2")),
    "latency-negative": (_column("microseconds", [1.0, 1.0, -5.0, 1.0]), ("'microseconds'", "-5.0", "row 3")),
    "latency-infinite": (_column("microseconds", [float("inf"), 1.0, 1.0, 1.0]), ("'microseconds'", "inf")),
    "sample-id-twice": (_column("sample_id", ["a", "b", "a", "c"]), ("sample_id 'a' appears twice",)),
}
# compare reads every one of these columns; a report of one run reads latencies only (it pairs no samples).
READS_ROWS = [(case, "compare") for case in SAMPLE_VALUES] + [
    (case, "report") for case in SAMPLE_VALUES if case.startswith("latency")
]


@pytest.mark.parametrize(("case", "command"), READS_ROWS)
def test_a_sample_row_out_of_range_is_refused_naming_column_and_row(tmp_path, made, case, command):
    change, words = SAMPLE_VALUES[case]
    _hostile(tmp_path, made, "samples.parquet", _samples_of(made, change))
    run_case(tmp_path, Case(f"{command}-{case}", COMMANDS[command], ("samples.parquet is damaged", *words)))


def test_a_run_file_with_a_byte_order_mark_is_read(tmp_path, made):
    """A BOM is dropped, as harness/reading.py reads every text file: the run is listed and checked."""
    results = _workspace(tmp_path, made)
    manifest = results / RUN / "manifest.json"
    manifest.write_bytes(b"\xef\xbb\xbf" + manifest.read_bytes())
    done = run_harness(tmp_path, "runs", "check", RUN, "--gates", "gates.toml", "--results", "results")
    assert done.returncode == 0 and "PASS accuracy" in done.stdout, done.stderr


# ---------------------------------------------------------------- gates files


GATES = "gates.toml"
CHECK = ("runs", "check", GOOD, "--gates", GATES, "--results", "results")
BOUNDS = {  # case: (gates.toml, the words)
    "accuracy-90": (b"[accuracy]\nmin = 90\n", ("[accuracy] min = 90", "out of range", "fractions", "0.9 for 90 %")),
    "accuracy-negative": (b"[accuracy]\nmin = -0.5\n", ("[accuracy] min = -0.5", "fractions")),
    "subset-accuracy-95": (b"[accuracy.all]\nmin = 95\n", ("[accuracy.all] min = 95", "fractions")),
    "agreement-2": (b"[agreement]\nmin = 2\n", ("[agreement] min = 2", "fractions")),
    "f1-100": (b"[f1]\nmin = 100\n", ("[f1] min = 100", "fractions")),
    "accuracy-drop-5": (b"[accuracy_drop]\nmax = 5\n", ("[accuracy_drop] max = 5", "fractions from -1 to 1")),
    "latency-negative": (b"[latency_ms]\nmax_median = -1\n", ("[latency_ms] max_median = -1", "at least 0")),
    "arena-negative": (b"[arena_bytes]\nmax = -1\n", ("[arena_bytes] max = -1", "at least 0")),
    "regression-10": (b"[latency]\nmax_regression = 10\n", ("[latency] max_regression = 10", "fractions")),
    "tolerance-negative": (
        b"[latency]\nmax_regression = 0\ntolerance = -1\n",
        ("[latency] tolerance = -1", "at least 0"),
    ),
    "instructions-negative": (b"[instructions]\nmax_median = -1\n", ("[instructions] max_median = -1", "at least 0")),
    "inf": (b"[accuracy]\nmin = inf\n", (GATES, "inf", "not a finite number")),
    "huge-bound": (b"[arena_bytes]\nmax = " + b"9" * 30 + b"\n", (GATES, "30-digit integer")),
    "gate-not-a-table": (b"accuracy = 0.9\n", ("accuracy = 0.9 is no table", "[accuracy]")),
}
GATE_FORMS = {**NOT_A_FILE, **NOT_TEXT, **NOT_TOML}


@pytest.mark.parametrize("case", [*GATE_FORMS, *BOUNDS])
def test_a_hostile_gates_file_is_refused_naming_it(tmp_path, made, case):
    _workspace(tmp_path, made)
    (tmp_path / GATES).unlink()
    if case in BOUNDS:
        content, words = BOUNDS[case]
    else:
        content, words = GATE_FORMS[case]
        words = ("gates file", *(word.format(name=GATES) for word in words))
    run_case(tmp_path, Case(f"gates-{case}", CHECK, words, {GATES: content}))


# ---------------------------------------------------------------- outputs that are not regular files


def _char_device(path: Path) -> None:
    """A character device like /dev/null (1, 3) at path: made by root only, else the test is skipped."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")


def _fifo(path: Path) -> None:
    os.mkfifo(path)


@pytest.mark.parametrize(
    "make, what", [(_fifo, "a FIFO"), (_char_device, "a character device")], ids=["fifo", "device"]
)
@pytest.mark.parametrize("option", ["report-out", "check-junit"])
def test_an_output_that_is_no_regular_file_is_refused_and_left_as_it_was(tmp_path, made, make, what, option):
    """The issue's /dev/full: a device node (made in a private folder) or a FIFO named as --out or --junit is
    refused before any work and stays what it was."""
    _workspace(tmp_path, made)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    target = private / "out"
    make(target)
    info = target.lstat()
    args = {
        "report-out": ("runs", "report", GOOD, "--results", "results", "--out", str(target)),
        "check-junit": (*CHECK, "--junit", str(target)),
    }[option]
    run_case(tmp_path, Case(option, args, (str(target), f"is {what}")))
    after = target.lstat()
    assert (stat.S_IFMT(after.st_mode), after.st_rdev, after.st_ino) == (
        stat.S_IFMT(info.st_mode),
        info.st_rdev,
        info.st_ino,
    )


def test_report_out_over_a_regular_file_replaces_it(tmp_path, made):
    _workspace(tmp_path, made)
    (tmp_path / "report.html").write_text("old")
    done = run_harness(tmp_path, "runs", "report", GOOD, "--results", "results", "--out", "report.html")
    assert done.returncode == 0, done.stderr
    assert "<html" in (tmp_path / "report.html").read_text().lower()
    assert not list(tmp_path.glob(".*.partial"))

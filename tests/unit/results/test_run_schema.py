"""The run record's schema as properties (hypothesis): every figure of a summary in its declared range
(harness/results/ranges.py) loads as it is stored; any figure out of its range, of the wrong type or not
finite makes the run damaged, named with its file and field; whatever bytes a run file holds, reading it
either gives a JSON object or refuses it in one line; a gate's bound outside its range is refused."""

import copy
import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import UserError
from harness.names import is_valid_id
from harness.results.gates_file import GATES, load_gates
from harness.results.record import read_json, record_of
from harness.results.run_checks import ROUNDING

MANIFEST = {
    "run_id": "r",
    "kind": "eval",
    "started": "2026-12-03T11:00:00+00:00",
    "model": {"card": "c", "bytes": 100},
    "board": {"id": "sim"},
}
SCORE = {"n": 4, "accuracy": 0.75, "accuracy_ci95": [0.3, 0.95], "f1_counts": 0.5, "tp": 1, "fn": 1, "fp": 0, "tn": 2}
SUMMARY = {
    "kind": "eval",
    "samples": 4,
    "subsets": {
        "all": {
            "n": 4,
            "device": SCORE,
            "host": {"tflm": copy.deepcopy(SCORE)},
            "versus": {"tflm": {"agreement": 1.0, "max_diff_steps": 0.0}},
            "pool_added": 0,
        }
    },
    "primary_reference": "tflm",
    "bit_exact": {"tflm": 4},
    "latency": {"source": "sim", "micros": {"min": 1.0, "median": 2.0, "p90": 3.0, "max": 4.0}, "cpu_hz": 1000},
    "arena": {"source": "sim", "configured": 2000, "used": 1000},
    "anomaly": {"device": {"files": 2, "anomalous_files": 1, "windows": 8, "auc": 0.5, "top1_percent": 50.0}},
    "unreadable_images": {"count": 0},
    "profile": {
        "source": "emulated",
        "unit": "instructions",
        "board": "qemu_m7",
        "sample": "s0",
        "total": 1000.0,
        "operators": [{"operator": "CONV_2D", "value": 600.0}, {"operator": "SOFTMAX", "value": 350.0}],
        "operators_run": 2,
    },
    "layer_traces": [
        {
            "source": "emulated",
            "reference": "host TFLM interpreter",
            "board": "qemu_m7",
            "model": "m",
            "sample": "s0",
            "operators_run": 2,
            "layers": [
                {"index": 0, "operator": "CONV_2D", "shape": [1, 4], "equal": True, "elements": 4},
                {
                    "index": 1,
                    "operator": "SOFTMAX",
                    "shape": [1, 2],
                    "equal": False,
                    "largest": 3.0,
                    "unit": "steps",
                    "differing": 1,
                    "elements": 2,
                },
            ],
            "fetched_bytes": 2,
        }
    ],
}

# Every figure of SUMMARY by its path, and the range it is declared with.
FRACTIONS = [
    ("subsets", "all", "device", "accuracy"),
    ("subsets", "all", "device", "f1_counts"),
    ("subsets", "all", "device", "accuracy_ci95", 0),
    ("subsets", "all", "device", "accuracy_ci95", 1),
    ("subsets", "all", "host", "tflm", "accuracy"),
    ("subsets", "all", "versus", "tflm", "agreement"),
    ("anomaly", "device", "auc"),
]
COUNTS = [
    ("samples",),
    ("subsets", "all", "n"),
    ("subsets", "all", "pool_added"),
    ("subsets", "all", "device", "n"),
    ("subsets", "all", "device", "tp"),
    ("subsets", "all", "device", "tn"),
    ("subsets", "all", "host", "tflm", "fp"),
    ("bit_exact", "tflm"),
    ("latency", "cpu_hz"),
    ("arena", "used"),
    ("arena", "configured"),
    ("anomaly", "device", "files"),
    ("anomaly", "device", "windows"),
    ("unreadable_images", "count"),
    ("profile", "operators_run"),
    ("layer_traces", 0, "operators_run"),
    ("layer_traces", 0, "fetched_bytes"),
    ("layer_traces", 0, "layers", 1, "differing"),
    ("layer_traces", 0, "layers", 1, "elements"),
    ("layer_traces", 0, "layers", 0, "shape", 1),
]
NON_NEGATIVE = [
    ("latency", "micros", "median"),
    ("latency", "micros", "min"),
    ("latency", "micros", "p90"),
    ("latency", "micros", "max"),
    ("subsets", "all", "versus", "tflm", "max_diff_steps"),
    ("profile", "total"),
    ("profile", "operators", 1, "value"),
    ("layer_traces", 0, "layers", 1, "largest"),
]
PERCENTS = [("anomaly", "device", "top1_percent")]


def _with(path: tuple, value) -> dict:
    summary = copy.deepcopy(SUMMARY)
    inner = summary
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    return summary


def _at(summary, path: tuple):
    for key in path:
        summary = summary[key]
    return summary


def _dotted(path: tuple) -> str:
    return ".".join(str(key) for key in path)


NOT_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])
NOT_A_NUMBER = st.one_of(st.text(max_size=5), st.booleans(), st.lists(st.integers(), max_size=2), st.just({}))
OUT_OF_FRACTION = st.one_of(
    st.floats(max_value=-1e-9, allow_infinity=False), st.floats(min_value=1 + 1e-9, allow_infinity=False), NOT_FINITE
)
OUT_OF_PERCENT = st.one_of(st.floats(max_value=-1e-9), st.floats(min_value=100 + 1e-6), NOT_FINITE)
OUT_OF_COUNT = st.one_of(st.integers(max_value=-1), st.floats(), NOT_A_NUMBER)
OUT_OF_NON_NEGATIVE = st.one_of(st.floats(max_value=-1e-9), NOT_FINITE, NOT_A_NUMBER)

OUT_OF_RANGE = st.one_of(
    st.tuples(st.sampled_from(FRACTIONS), st.one_of(OUT_OF_FRACTION, NOT_A_NUMBER)),
    st.tuples(st.sampled_from(PERCENTS), st.one_of(OUT_OF_PERCENT, NOT_A_NUMBER)),
    st.tuples(st.sampled_from(COUNTS), OUT_OF_COUNT),
    st.tuples(st.sampled_from(NON_NEGATIVE), OUT_OF_NON_NEGATIVE),
)
# Figures bound to others (accuracy within its interval, tp+fn+fp+tn == n, counts within the samples): a value
# in range alone may disagree with them, so the in-range property leaves them out (tested below).
TIED = {
    ("subsets", "all", "device", "accuracy"),
    ("subsets", "all", "device", "accuracy_ci95", 0),
    ("subsets", "all", "device", "accuracy_ci95", 1),
    ("subsets", "all", "host", "tflm", "accuracy"),
    ("samples",),
    ("subsets", "all", "n"),
    ("subsets", "all", "device", "n"),
    ("subsets", "all", "device", "tp"),
    ("subsets", "all", "device", "tn"),
    ("subsets", "all", "host", "tflm", "fp"),
    ("bit_exact", "tflm"),
    ("layer_traces", 0, "operators_run"),
    ("layer_traces", 0, "layers", 1, "differing"),
}


def _free(paths: list) -> list:
    return [path for path in paths if path not in TIED]


IN_RANGE = st.one_of(
    st.tuples(st.sampled_from(_free(FRACTIONS)), st.floats(min_value=0, max_value=1)),
    st.tuples(st.sampled_from(PERCENTS), st.floats(min_value=0, max_value=100)),
    st.tuples(st.sampled_from(_free(COUNTS)), st.integers(min_value=1, max_value=2**63)),
    st.tuples(st.sampled_from(NON_NEGATIVE), st.floats(min_value=0, max_value=1e300)),
)


def test_the_example_record_loads():
    record = record_of(MANIFEST, SUMMARY, "results/r")
    assert record.summary.subsets["all"].device.accuracy == 0.75


@settings(max_examples=300, deadline=None)
@given(OUT_OF_RANGE)
def test_any_figure_out_of_its_range_makes_the_run_damaged_naming_the_field(change):
    path, value = change
    with pytest.raises(UserError) as refused:
        record_of(MANIFEST, _with(path, value), "results/r")
    message = str(refused.value)
    assert message.startswith("results/r: summary.json is damaged: field ")
    assert _dotted(path) in message and "\n" not in message


@settings(max_examples=300, deadline=None)
@given(IN_RANGE)
def test_any_figure_in_its_range_loads_as_stored(change):
    path, value = change
    summary = record_of(MANIFEST, _with(path, value), "results/r").summary
    stored = _at(_as_json(summary), path)
    assert stored == value


def _as_json(summary) -> dict:
    from harness.results.schema import to_json

    return to_json(summary)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=200), JSON.map(lambda v: json.dumps(v).encode())))
def test_whatever_a_run_file_holds_it_is_read_or_refused_in_one_line(content):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "summary.json"
        path.write_bytes(content)
        try:
            data = read_json(path, "results/r")
        except UserError as exc:
            assert str(exc).startswith("results/r: summary.json is damaged: ") and "\n" not in str(exc)
            return
        assert isinstance(data, dict)


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_whatever_json_object_a_summary_is_the_record_loads_or_is_damaged(value):
    summary = value if isinstance(value, dict) else {"subsets": value}
    try:
        record_of(MANIFEST, summary, "results/r")
    except UserError as exc:
        assert "summary.json is damaged" in str(exc) and "\n" not in str(exc)


SHARE_GATES = [(name, gate.settings[0]) for name, gate in GATES.items() if gate.range == (0.0, 1.0)]


def _load(text: str) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "gates.toml"
        path.write_text(text)
        return load_gates(path)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SHARE_GATES), st.one_of(st.floats(min_value=1.000001, max_value=1e6), st.integers(2, 10**9)))
def test_a_share_bound_above_1_is_refused_with_the_hint_that_bounds_are_fractions(gate, bound):
    name, key = gate
    with pytest.raises(UserError, match=r"out of range; bounds are fractions from 0 to 1 \(0.9 for 90 %\)"):
        _load(f"[{name}]\n{key} = {bound!r}\n")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SHARE_GATES), st.floats(min_value=0, max_value=1))
def test_a_share_bound_in_range_is_taken(gate, bound):
    name, key = gate
    assert _load(f"[{name}]\n{key} = {bound!r}\n") == {name: {key: bound}}


STREAM_MANIFEST = dict(MANIFEST, kind="stream")
OPTIMAL = {
    "policy": "optimal",
    "tolerance_ms": 750,
    "duration_ms": 8000,
    "timing_reference": None,
    "events": 2,
    "detections": 2,
    "hits": 1,
    "misses": 1,
    "substitutions": 0,
    "duplicates": 0,
    "false_alarms": 1,
    "recall": 0.5,
    "precision": 0.5,
    "false_alarms_per_hour": 450.0,
    "unwanted_triggers": 1,
    "unwanted_triggers_per_hour": 450.0,
    "ignored_events": 0,
    "ignored_detections": 0,
    "per_label": [],
    "latency": {"timing_reference": None, "measured_from": "event end", "count": 1},
    "outcomes": [],
}
STREAM_SUMMARY = {
    "kind": "stream",
    "audio": {"file": "s.wav", "duration_ms": 8000, "sample_rate": 16000},
    "device_equals_host": True,
    "busy": {"source": "sim", "seconds": 0.2, "real_time_factor": 0.025},
    "scores": {"optimal": OPTIMAL},
}
STREAM_FIGURES = {  # field: a value out of its range
    ("scores", "optimal", "recall"): 1.5,
    ("scores", "optimal", "precision"): -0.5,
    ("scores", "optimal", "false_alarms_per_hour"): -1.0,
    ("scores", "optimal", "hits"): -1,
    ("audio", "duration_ms"): -8000,
    ("audio", "sample_rate"): 16000.5,
    ("busy", "seconds"): math.inf,
    ("feature_rows",): -1,
}


def test_the_example_stream_record_loads():
    assert record_of(STREAM_MANIFEST, STREAM_SUMMARY, "results/s").summary.optimal.recall == 0.5


@pytest.mark.parametrize("path", list(STREAM_FIGURES), ids=_dotted)
def test_a_stream_figure_out_of_its_range_makes_the_run_damaged(path):
    summary = copy.deepcopy(STREAM_SUMMARY)
    inner = summary
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = STREAM_FIGURES[path]
    with pytest.raises(UserError, match=r"summary\.json is damaged: field") as refused:
        record_of(STREAM_MANIFEST, summary, "results/s")
    assert path[-1] in str(refused.value)


# ---------------------------------------------------------------- issue #31's record review: strict and consistent


def _manifest(**changes) -> dict:
    return dict(copy.deepcopy(MANIFEST), **changes)


def _refused(manifest: dict, summary: dict, *words: str, where="results/r") -> None:
    with pytest.raises(UserError) as refused:
        record_of(manifest, summary, where)
    message = str(refused.value)
    assert "is damaged" in message and "\n" not in message
    assert all(word in message for word in words), message


KEY = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)


@settings(max_examples=100, deadline=None)
@given(KEY.filter(lambda key: key not in SUMMARY and key not in {"kind", "model", "board", "dataset", "task"}))
def test_a_key_the_summary_does_not_declare_is_refused(key):
    from harness.results.summary import EvalSummary

    if key in EvalSummary.__dataclass_fields__:
        return
    _refused(MANIFEST, dict(SUMMARY, **{key: 1}), key)


@settings(max_examples=100, deadline=None)
@given(KEY.filter(lambda key: key not in MANIFEST))
def test_a_key_the_manifest_does_not_declare_is_refused(key):
    from harness.results.manifest import Manifest

    if key in Manifest.__dataclass_fields__:
        return
    _refused(_manifest(**{key: 1}), SUMMARY, key)


def test_a_key_twice_in_a_run_file_is_refused(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text('{"samples": 4, "samples": 5}')
    with pytest.raises(UserError, match="key 'samples' twice in one object"):
        read_json(path, "results/r")


CONTROL = st.sampled_from(["\n", "\x1b", "\u202e", "\u200b", "\x00", "\t"])


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=5), CONTROL, st.text(max_size=5))
def test_a_subset_name_with_a_control_or_format_character_is_damaged(before, control, after):
    subsets = {before + control + after: SUMMARY["subsets"]["all"]}
    _refused(MANIFEST, dict(SUMMARY, subsets=subsets), "control")


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=70).filter(lambda text: not is_valid_id(text)))
def test_a_board_id_that_is_no_id_is_damaged(board):
    _refused(_manifest(board={"id": board}), SUMMARY, "board.id")


def test_the_run_id_is_a_run_id_and_a_renamed_folder_still_reads():
    """A run folder copied or renamed (an archive, a baseline) keeps its run id; an id that is none is damage."""
    _refused(_manifest(run_id="../../x"), SUMMARY, "it is not an id", where=Path("results/r"))
    assert record_of(MANIFEST, SUMMARY, Path("results/renamed")).manifest.run_id == "r"


def test_a_folder_named_as_another_run_is_damaged():
    """A copy under another run's id would be listed and judged as a second run."""
    other = "20261203T142219Z-mlperf_tiny_vww-sim-ffff"
    _refused(MANIFEST, SUMMARY, f"not the folder's name {other!r}", "rename it back to r", where=Path(other))


@settings(max_examples=100, deadline=None)
@given(st.floats(min_value=0, max_value=1), st.floats(min_value=0, max_value=1), st.floats(min_value=0, max_value=1))
def test_accuracy_outside_its_interval_is_damaged(accuracy, low, high):
    low, high = sorted((low, high))
    summary = _with(("subsets", "all", "device", "accuracy_ci95"), [low, high])
    summary["subsets"]["all"]["device"]["accuracy"] = accuracy
    if low - ROUNDING <= accuracy <= high + ROUNDING:
        record_of(MANIFEST, summary, "results/r")
    else:
        _refused(MANIFEST, summary, "accuracy_ci95")


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=5, max_value=2**50))
def test_counts_beyond_the_samples_are_damaged(count):
    for path in [("bit_exact", "tflm"), ("subsets", "all", "n"), ("subsets", "all", "device", "tp")]:
        _refused(MANIFEST, _with(path, count), "more than")


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"started": "yesterday"}, ("'started'", "ISO 8601")),
        ({"finished": "2000-01-01T00:00:00Z"}, ("before",)),
        ({"model": {"card": "c", "sha256": "ab" * 31}}, ("model.sha256",)),
        ({"device": {"timer": {"kind": "cycles", "hz": 0}}}, ("device.timer.hz",)),
        ({"settings": {"limit": 0}}, ("limit",)),
        ({"settings": {"boards": -1}}, ("boards",)),
        ({"host": {"cpus": 0}}, ("cpus",)),
    ],
)
def test_manifest_parts_out_of_range_are_damaged(changes, words):
    _refused(_manifest(**changes), SUMMARY, *words)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"link": {"resends": -1}}, ("resends",)),
        ({"link": {"byte_error_rate": 1.5}}, ("byte_error_rate",)),
        ({"references": {"used": ["tflm", "tflm"]}}, ("twice",)),
        ({"subsets": {}}, ("never scored",)),
    ],
)
def test_summary_parts_out_of_range_are_damaged(changes, words):
    _refused(_manifest(finished="2026-12-03T12:00:00Z"), dict(copy.deepcopy(SUMMARY), **changes), *words)


IDENTITY = {"board_id": "sim", "firmware_build_id": "fw-1", "protocol_version": 2, "model_sha256_prefix": "ab" * 8}


def _shares(retired: dict | None, failure: str | None = "the board behind the port is no longer the run's") -> dict:
    swapped = {"name": "/dev/ttyACM0", "samples": 1, "failure": failure} | ({"retired": retired} if retired else {})
    return dict(copy.deepcopy(SUMMARY), boards=[swapped, {"name": "/dev/ttyACM1", "samples": 3}])


def test_a_retired_board_records_what_it_said_and_what_was_expected_and_older_shares_still_read():
    said = dict(IDENTITY, model_sha256_prefix="cd" * 8)
    record = record_of(MANIFEST, _shares({"expected": IDENTITY, "said": said}), "results/r")
    retired = record.summary.boards[0].retired
    assert retired.expected.model_sha256_prefix == "ab" * 8 and retired.said.model_sha256_prefix == "cd" * 8
    assert record_of(MANIFEST, _shares({"expected": IDENTITY}), "results/r").summary.boards[0].retired.said is None
    assert record_of(MANIFEST, _shares(None), "results/r").summary.boards[0].retired is None


@pytest.mark.parametrize(
    ("summary", "words"),
    [
        (_shares({"expected": IDENTITY}, failure=None), ("boards.0.retired", "failure")),
        (_shares({"expected": dict(IDENTITY, protocol_version=-1)}), ("protocol_version",)),
        (_shares({"said": IDENTITY}), ("expected",)),
    ],
)
def test_a_retirement_that_does_not_hold_together_is_damaged(summary, words):
    _refused(MANIFEST, summary, *words)


def test_a_finished_run_with_an_unscored_device_subset_is_damaged():
    summary = _with(("subsets", "all", "device", "accuracy"), None)
    summary["subsets"]["all"]["device"]["accuracy_ci95"] = None
    record_of(MANIFEST, summary, "results/r")  # unfinished: not yet scored
    _refused(_manifest(finished="2026-12-03T12:00:00Z"), summary, "never scored")


@pytest.mark.parametrize("spec", ["../elsewhere/RUN", "results/../r", "r\n", "r\u202e", "", " "])
def test_a_run_that_is_no_run_id_is_refused_in_one_line(spec, tmp_path):
    from harness.results.runs import load_run

    with pytest.raises(UserError, match=r"is not a run id; runs are read from ") as refused:
        load_run(spec, tmp_path)
    assert "\n" not in str(refused.value).replace(repr(spec), "")


def _trace_with(**layer_changes) -> dict:
    summary = copy.deepcopy(SUMMARY)
    summary["layer_traces"][0]["layers"][1].update(layer_changes)
    return summary


@pytest.mark.parametrize(
    ("summary", "words"),
    [
        (_trace_with(differing=3), ("differing", "more than its 2 elements")),
        (_trace_with(largest=None), ("largest", "both set or both null")),
        (_trace_with(equal=True), ("digest equals the host's",)),
        (_trace_with(index=5), ("in order",)),
        (dict(copy.deepcopy(SUMMARY), layer_traces=[dict(SUMMARY["layer_traces"][0], operators_run=3)]), ("holds 2",)),
    ],
)
def test_a_layer_trace_whose_counts_disagree_is_damaged(summary, words):
    _refused(MANIFEST, summary, *words)

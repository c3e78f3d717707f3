"""The eval settings, declared once, make the eval parser and the resume record; the run record reads run
folders of earlier versions."""

import dataclasses

import pytest

from harness.cli.app import build_parser
from harness.errors import UserError
from harness.eval.settings import EvalSettings
from harness.link.faults import FaultSpec
from harness.results.record import parse_manifest, parse_summary, record_of
from harness.results.schema import to_json
from harness.results.summary import EvalSummary, StreamSummary


def _eval_args(*argv):
    return build_parser().parse_args(["eval", *argv])


def test_every_declared_setting_is_an_eval_argument_with_its_default():
    args = _eval_args()
    for field in dataclasses.fields(EvalSettings):
        assert getattr(args, field.name) == field.default, field.name
    assert EvalSettings.from_args(args) == EvalSettings()


def test_settings_from_the_command_line_survive_the_resume_record():
    args = _eval_args(
        "--limit", "3", "--pools", "--references", "tflm", "--faults", "drop=1e-3,reset-every=5",
        "--link-baud", "115200", "--emulate-invoke-ms", "2.5", "--shuffle",
    )  # fmt: skip
    settings = EvalSettings.from_args(args)
    assert settings.limit == 3 and settings.pools and settings.references == ("tflm",)
    assert settings.faults == FaultSpec(drop=1e-3, reset_every=5)
    assert settings.order_seed is not None and settings.order_seed >= 0  # drawn once, kept for the resume
    assert EvalSettings.restored(settings.stored()) == settings
    assert EvalSettings.from_args(_eval_args("--shuffle", "7")).order_seed == 7


def test_a_resume_record_of_an_earlier_version_still_loads():
    stored = {  # request.json as the version before the settings were declared wrote it
        "board": "sim",
        "model": "wv_quality_k_2_c_3",
        "model_file": None,
        "port": None,
        "serial": None,
        "dataset": "demo",
        "subset": "all,distance_far",
        "split": None,
        "limit": 24,
        "pools": False,
        "strict": False,
        "references": ["tflm", "litert_ref"],
        "tflm": None,
        "protocol": "harness",
        "link_baud": None,
        "emulate_invoke_ms": 40.0,
        "switch_baud": None,
        "faults": {"drop": 0.001, "corrupt": 0.0, "dup": 0.0, "reset_every": 0},
        "order_seed": 11,
    }  # no labgrid_place, meter, boards, labgrid_tags, baud, order, seed, clean_labels, profile nor trace_layers
    settings = EvalSettings.restored(stored)
    assert settings.references == ("tflm", "litert_ref") and settings.faults == FaultSpec(drop=0.001)
    assert settings.labgrid_place is None and settings.meter is None and settings.order_seed == 11
    assert settings.boards == 1
    assert settings.baud is None
    defaults = {"labgrid_place": None, "meter": None, "boards": 1, "labgrid_tags": None, "baud": None, "seed": 0}
    defaults |= {"clean_labels": None, "profile": False, "trace_layers": 0}
    assert settings.order == "dataset"  # as the earlier version selected: the first samples
    assert settings.stored() == stored | defaults | {"order": "dataset"}
    older = {name: value for name, value in stored.items() if name != "pools"}  # before --pools: none added
    assert EvalSettings.restored(older).pools is False


def test_a_damaged_resume_record_is_one_line():
    with pytest.raises(UserError, match="setting limit is damaged"):
        EvalSettings.restored({"limit": "many"}, "x/request.json")


def test_an_eval_run_of_an_earlier_version_reads_as_an_eval_run():
    summary = parse_summary({"subsets": {}, "latency": {"source": "sim"}, "arena": {"source": "sim", "used": 0}})
    assert isinstance(summary, EvalSummary) and summary.arena.used is None  # 0 was "not reported"
    manifest = {"run_id": "r", "started": "2026-12-03T11:00:00Z", "model": {"card": "c"}, "board": {"id": "sim"}}
    assert parse_manifest(manifest).kind == "eval"


def test_a_stream_run_of_an_earlier_version_keeps_its_firmware():
    manifest = {
        "run_id": "r",
        "kind": "stream",
        "started": "2026-12-03T11:00:00Z",
        "model": {"card": "tflm_micro_speech", "frontend": "f.tflite"},
        "board": {"id": "sim", "kind": "virtual", "firmware_build_id": "sim-0123"},
    }
    summary = {
        "kind": "stream",
        "audio": {"file": "s.wav", "duration_ms": 8000, "sample_rate": 16000},
        "detections": {"device": [{"label": "yes", "time_ms": 2400, "score": 250.0, "reference": "decision"}]},
        "device_equals_host": True,
        "busy": {"source": "sim", "seconds": 0.2},
        "scores": {"optimal": None, "mlperf-sww": {"not_scorable": "needs end times"}},
    }
    record = record_of(manifest, summary)
    assert record.kind == "stream" and record.manifest.device.firmware_build_id == "sim-0123"
    assert isinstance(record.summary, StreamSummary) and record.summary.optimal is None
    assert to_json(record.summary)["scores"]["mlperf-sww"] == {"not_scorable": "needs end times"}


def test_a_referee_session_is_no_eval_or_stream_run():
    with pytest.raises(UserError, match="is a referee run"):
        record_of({"run_id": "r", "kind": "referee"}, {"kind": "referee"}, "results/r")


def test_a_manifest_and_a_summary_of_different_kinds_are_refused():
    manifest = {
        "run_id": "r",
        "kind": "stream",
        "started": "2026-12-03T11:00:00Z",
        "model": {"card": "c"},
        "board": {"id": "sim"},
    }
    with pytest.raises(UserError, match="damaged"):
        record_of(manifest, {"subsets": {}, "latency": {"source": "sim"}, "arena": {"source": "sim"}})
    with pytest.raises(UserError, match=r"latency"):
        record_of(dict(manifest, kind="eval"), {"subsets": {}})

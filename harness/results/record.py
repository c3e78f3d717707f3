"""The run record: what a run folder's manifest.json and summary.json hold, written and read here only.

A run is of one kind:
- `eval`: benchmark samples through a board and the host references, scored per subset (samples.parquet
  beside the record);
- `stream`: a WAV through the keyword pipeline on the board and on the host, its detections compared and
  scored against a ledger (detections_device.csv and detections_host.csv beside the record).

The manifest says where a run's figures come from (harness, host, board, firmware, model, data, settings);
the summary holds the figures. Every figure keeps the label of its source: `device` (a board's own counters),
`emulated` (QEMU instruction counts), `sim` (the virtual board or a simulated meter: this machine's time),
`host`, `estimated`.

The records are frozen dataclasses (harness/results/manifest.py, harness/results/summary.py); pydantic turns
them into the JSON on disk and back (harness/results/schema.py). Reading is lenient
about what is absent, so run folders of earlier versions (and hand-made ones) still load: a field they lack
takes its default, a key this version no longer reads is ignored, and `_upgraded` moves what earlier versions
kept elsewhere. It is strict about what is there: the files are read as harness/reading.py reads every file
(a regular file within its size, UTF-8, nesting and numbers bounded, no NaN), every field is of its type and
every figure in its range (harness/results/ranges.py); anything else makes the run damaged, named with its
file and field (`damaged`)."""

import os
from dataclasses import dataclass
from pathlib import Path

import pydantic

from harness import reading
from harness.errors import UserError
from harness.results.manifest import Manifest
from harness.results.run_checks import eval_summary_problem, manifest_problem
from harness.results.schema import KINDS, Kind, adapter, field_problem, parse, to_json
from harness.results.summary import EvalSummary, StreamSummary, Summary

MANIFEST, SUMMARY = "manifest.json", "summary.json"
# What a complete run folder of each kind holds beside its record.
TABLES: dict[str, tuple[str, ...]] = {
    "eval": ("samples.parquet",),
    "stream": ("detections_device.csv", "detections_host.csv"),
}


@dataclass(frozen=True)
class RunRecord:
    manifest: Manifest
    summary: EvalSummary | StreamSummary

    @property
    def kind(self) -> Kind:
        return self.manifest.kind


def _kind(data: dict):
    return data.get("kind") or "eval"  # eval runs of earlier versions say no kind


def _upgraded(manifest: dict) -> dict:
    """Where earlier versions kept things: a stream run's firmware build id sat under board."""
    manifest = dict(manifest, kind=_kind(manifest))
    board = manifest.get("board")
    if isinstance(board, dict) and "firmware_build_id" in board and "device" not in manifest:
        manifest["device"] = {"firmware_build_id": board["firmware_build_id"]}
        manifest["board"] = {key: value for key, value in board.items() if key != "firmware_build_id"}
    return manifest


def parse_manifest(data: dict, where: str = MANIFEST) -> Manifest:
    return parse(Manifest, _upgraded(data), where)


def parse_summary(data: dict, where: str = SUMMARY) -> EvalSummary | StreamSummary:
    return parse(Summary, dict(data, kind=_kind(data)), where)


# The kind of file (harness/reading.py: its name in messages, its size limit) of each JSON file of a run folder.
FILE_KINDS = {MANIFEST: reading.MANIFEST, SUMMARY: reading.SUMMARY, "request.json": reading.REQUEST}


def kind_of(path: Path):
    """The kind a folder's manifest names, as stored (None: no readable manifest)."""
    try:
        return _kind(reading.read_json(path / MANIFEST, reading.MANIFEST))
    except (UserError, AttributeError):
        return None


DAMAGED_FIX = "restore the file or remove the run folder; `harness runs` lists the runs it can read"


def damaged(spec, name: str, why: str) -> UserError:
    """The one line naming a run folder's damaged file and why."""
    return UserError(f"{spec}: {name} is damaged: {why}; {DAMAGED_FIX}")


def read_json(path: Path, spec: str | Path) -> dict:
    """A run folder's JSON object `path` (the folder named `spec`, as the user knows it), read as
    harness/reading.py reads every file (a regular file, within its size, UTF-8, nesting and numbers bounded);
    a damaged one is refused in one line naming the file and why."""
    kind = FILE_KINDS.get(path.name, reading.JSON_STREAM)
    try:
        text = reading.read_text(path, kind)
    except UserError as exc:
        raise damaged(spec, path.name, reading_problem(exc, kind, path)) from None
    if not text.strip():
        raise damaged(spec, path.name, "it is empty")
    try:
        data = reading.parse_json(text, kind, path)
    except UserError as exc:
        raise damaged(spec, path.name, reading_problem(exc, kind, path)) from None
    if not isinstance(data, dict):
        raise damaged(spec, path.name, f"it is a JSON {_json_type(data)}, not an object")
    return data


def reading_problem(exc: UserError, kind: reading.FileKind, path: Path) -> str:
    """What harness/reading.py found wrong with the file, without its own naming of the file (a run's file is
    named by its folder and name) nor its "name a file" (the fix is the run's: restore it)."""
    said, prefix = str(exc), f"{kind.name} {path} "
    if not said.startswith(prefix):
        return said
    return "it " + said.removeprefix(prefix).replace("; name a file", "")


def _json_type(data) -> str:
    names = {list: "list", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return names.get(type(data), type(data).__name__)


def read_files(path: Path, spec: str | None = None) -> tuple[dict, dict]:
    """The stored manifest and summary of the run folder `path` (named `spec` on the command line)."""
    spec = spec or path
    missing = [name for name in (MANIFEST, SUMMARY) if not os.path.lexists(path / name)]
    if missing:
        raise UserError(
            f"{spec} is not a run folder (needs {MANIFEST} and {SUMMARY}; {' and '.join(missing)} missing); "
            "see `harness runs`"
        )
    return read_json(path / MANIFEST, spec), read_json(path / SUMMARY, spec)


def record_of(manifest: dict, summary: dict, where: Path | str = "") -> RunRecord:
    """The typed record of a run folder's stored manifest and summary (`where`: the folder, for messages):
    every field of its type and every figure in its range (harness/results/ranges.py), else the run is
    damaged, named with its file and field."""
    where = where or "the run"
    for name, data in ((MANIFEST, manifest), (SUMMARY, summary)):
        if not isinstance(data, dict):
            raise damaged(where, name, f"it is a JSON {_json_type(data)}, not an object")
        if not isinstance(_kind(data), str):
            raise damaged(where, name, f"field 'kind' is {_kind(data)!r}, not a kind of run (eval or stream)")
    if _kind(manifest) not in KINDS:
        raise UserError(f"{where} is a {_kind(manifest)} run, not an eval or stream run")
    record = RunRecord(
        _checked(Manifest, _upgraded(manifest), where, MANIFEST),
        _checked(Summary, dict(summary, kind=_kind(summary)), where, SUMMARY),
    )
    if record.summary.kind != record.manifest.kind:
        raise damaged(
            where, SUMMARY, f"it is of a {record.summary.kind} run, its {MANIFEST} of a {record.manifest.kind} run"
        )
    _check_agreement(record, where)
    return record


def _check_agreement(record: RunRecord, where) -> None:
    """The record's figures agree with each other and with its folder (harness/results/run_checks.py)."""
    folder_name = where.name if isinstance(where, Path) else None
    problem = manifest_problem(record.manifest, folder_name)
    if problem:
        raise damaged(where, MANIFEST, problem)
    summary = record.summary
    if summary.run_id is not None and summary.run_id != record.manifest.run_id:
        raise damaged(where, SUMMARY, f"field 'run_id' is {summary.run_id!r}, its {MANIFEST} says otherwise")
    if isinstance(summary, EvalSummary):
        problem = eval_summary_problem(summary, finished=record.manifest.finished is not None)
        if problem:
            raise damaged(where, SUMMARY, problem)


def _checked(schema, data: dict, where, name: str):
    try:
        return adapter(schema).validate_python(data)
    except pydantic.ValidationError as exc:
        raise damaged(where, name, field_problem(exc)) from None


def write_record(folder, record: RunRecord) -> None:
    """The record into a run folder being written (harness/results/store.py RunFolder)."""
    folder.write_json(MANIFEST, to_json(record.manifest))
    folder.write_json(SUMMARY, to_json(record.summary))

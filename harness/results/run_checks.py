"""The run record's rules beyond one field's type and range (harness/results/record.py reads a record through
them): text shown in a table holds no control or format character, ids are ids, the free-form parts (settings,
link counters, host, references) hold their figures in range, and the figures of a summary agree with each
other. Each check returns why a record is damaged, or None."""

import re
import unicodedata
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator

from harness.names import ID_RULE, MADE_RUN_ID, RUN_ID_PATTERN, RUN_ID_RULE, is_valid_id
from harness.results.task_facts import EARLIER_TASKS

MAX_SAMPLES = 2**40  # more samples than any run holds: a count past it is damage
SHA256 = re.compile(r"[0-9a-f]{64}")


def has_control(text: str) -> bool:
    """A control or format character (Unicode Cc/Cf: newline, escape, bidi overrides, zero-width joiners)."""
    return any(unicodedata.category(char) in ("Cc", "Cf") for char in text)


def _plain(text: str) -> str:
    if has_control(text):
        raise ValueError("it holds a control or format character")
    return text


def _id(text: str) -> str:
    if not is_valid_id(text):
        raise ValueError(f"it is not an id ({ID_RULE})")
    return text


def _sha256(text: str) -> str:
    if not SHA256.fullmatch(text):
        raise ValueError("it is not a SHA-256 (64 lowercase hex digits)")
    return text


def _timestamp(text: str) -> str:
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("it is not an ISO 8601 time") from None
    return text


def _unique(names: list) -> list:
    if len(set(names)) != len(names):
        raise ValueError("it names a reference twice")
    return names


def _plain_keys(mapping: dict) -> dict:
    for key in mapping or {}:
        _plain(key)
    return mapping


# Text a table shows (a subset, a reference, a caveat), an id, a digest, a time.
PlainText = Annotated[str, AfterValidator(_plain)]
Id = Annotated[str, AfterValidator(_id)]
Sha256 = Annotated[str, AfterValidator(_sha256)]
Timestamp = Annotated[str, AfterValidator(_timestamp)]
UniqueNames = Annotated[list[PlainText], AfterValidator(_unique)]
PlainKeys = AfterValidator(_plain_keys)


def _is_count(value, least: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _is_fraction(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1


def _settings(settings: dict | None) -> dict | None:
    """An eval or stream run's settings (harness/eval/settings.py): the figures that size the run in range."""
    if settings is None:
        return None
    for name in ("limit", "boards"):
        value = settings.get(name)
        if value is not None and not _is_count(value, 1):
            raise ValueError(f"setting {name!r} is {value!r}, not a whole number of at least 1")
    return settings


def _link(link: dict) -> dict:
    """The link's counters (harness/link/session.py LinkStats): whole numbers of at least 0, and the byte error
    rate a fraction."""
    for name, value in link.items():
        _plain(name)
        if name == "byte_error_rate":
            if not _is_fraction(value):
                raise ValueError(f"byte_error_rate is {value!r}, not a fraction from 0 to 1")
        elif isinstance(value, int | float) and not _is_count(value):
            raise ValueError(f"counter {name!r} is {value!r}, not a whole number of at least 0")
    return link


def _host(host: dict | None) -> dict | None:
    """harness/results/provenance.py host_machine(): text, and a count of CPUs."""
    if host is None:
        return None
    cpus = host.get("cpus")
    if cpus is not None and not _is_count(cpus, 1):
        raise ValueError(f"cpus is {cpus!r}, not a whole number of at least 1")
    return host


Settings = Annotated[dict[str, Any] | None, AfterValidator(_settings)]
LinkCounters = Annotated[dict[str, Any], AfterValidator(_link)]
Host = Annotated[dict[str, Any] | None, AfterValidator(_host)]
ManifestReferences = Annotated[dict[PlainText, Any] | None, PlainKeys]


# ---------------------------------------------------------------- figures that must agree


ROUNDING = 1e-9  # how far a stored bound may miss the figure it bounds by float arithmetic alone


def manifest_problem(manifest, folder_name: str | None) -> str | None:
    """Why a manifest is damaged as a whole (its fields each passed their own check)."""
    # A run folder may be renamed or copied (an archive, a baseline) to a name that is no run id: its run_id need
    # not be the folder's name then, but it is a run id, since tables, reports and resumes name the run by it.
    if RUN_ID_PATTERN.fullmatch(manifest.run_id) is None:
        return f"field 'run_id' is {manifest.run_id!r}, not a run id ({RUN_ID_RULE})"
    # A folder named as a run id is that run: a copy under another run's id would list and judge as two runs.
    if folder_name and MADE_RUN_ID.fullmatch(folder_name) and folder_name != manifest.run_id:
        return (
            f"field 'run_id' is {manifest.run_id!r}, not the folder's name {folder_name!r}: a folder named as a run "
            f"id holds that run; rename it back to {manifest.run_id}, or to another name (e.g. baseline)"
        )
    if manifest.finished is not None and _time(manifest.finished) < _time(manifest.started):
        return f"field 'finished' ({manifest.finished}) is before field 'started' ({manifest.started})"
    return None


def _time(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.now().astimezone().tzinfo)


def score_problem(score, where: str, samples: int) -> str | None:
    """One source's scores on one subset agree with each other and with the run's samples. The positives
    (tp, fn) are members of the subset (at most its n); the negatives (fp, tn) are its negative pool, which
    may lie outside the subset (harness/eval/metrics.py score), so all four add up to at most the samples."""
    if score.accuracy is not None and score.accuracy_ci95 is not None:
        low, high = score.accuracy_ci95
        if not low - ROUNDING <= score.accuracy <= high + ROUNDING:  # Wilson's bounds are computed in floats
            return f"field '{where}.accuracy' ({score.accuracy}) lies outside its accuracy_ci95 [{low}, {high}]"
    if score.tp is not None and score.fn is not None and score.tp + score.fn > score.n:
        return f"fields '{where}.tp' and 'fn' add up to {score.tp + score.fn}, more than its n {score.n}"
    if score.fp is not None and score.tn is not None:
        if score.negatives is not None and score.fp + score.tn != score.negatives:
            return f"fields '{where}.fp' and 'tn' add up to {score.fp + score.tn}, not its negatives {score.negatives}"
        counted = score.fp + score.tn + (score.tp or 0) + (score.fn or 0)
        if counted > samples:
            return f"fields '{where}.tp/fn/fp/tn' add up to {counted}, more than the run's {samples} samples"
    if score.n > samples:
        return f"field '{where}.n' is {score.n}, more than the run's {samples} samples"
    return None


def eval_summary_problem(summary, finished: bool) -> str | None:
    """An eval summary's figures agree: with its samples, between sources, and a finished run scored."""
    if summary.samples > MAX_SAMPLES:
        return f"field 'samples' is {summary.samples}, more than {MAX_SAMPLES}"
    for reference, count in summary.bit_exact.items():
        if count > summary.samples:
            return f"field 'bit_exact.{reference}' is {count}, more than its {summary.samples} samples"
    if summary.task_facts is None and summary.task not in EARLIER_TASKS:
        return f"field 'task_facts' is missing: task {summary.task!r} is none whose facts an earlier version implied"
    if finished and summary.facts.decides_samples and summary.samples and not summary.subsets:
        return "field 'subsets' is empty in a finished run: it was never scored"
    for name, subset in summary.subsets.items():
        problem = _subset_problem(name, subset, summary, finished)
        if problem:
            return problem
    for k, share in enumerate(summary.boards):
        if share.retired is not None and share.failure is None:
            return f"field 'boards.{k}.retired' is set but 'boards.{k}.failure' is null: a retired board stopped"
    for k, trace in enumerate(summary.layer_traces):
        problem = _trace_problem(trace, f"layer_traces.{k}")
        if problem:
            return problem
    return None


def _trace_problem(trace, where: str) -> str | None:
    """A layer trace's operators are in order, and each one's counts agree with its digest's verdict."""
    if [layer.index for layer in trace.layers] != list(range(len(trace.layers))):
        return f"field '{where}.layers' does not hold operators 0, 1, 2, ... in order"
    if len(trace.layers) != trace.operators_run:
        return f"field '{where}.operators_run' is {trace.operators_run}, but it holds {len(trace.layers)} operators"
    for layer in trace.layers:
        at = f"{where}.layers.{layer.index}"
        if (layer.largest is None) != (layer.differing is None):
            return f"fields '{at}.largest' and 'differing' are not both set or both null"
        if layer.differing is not None and layer.differing > layer.elements:
            return f"field '{at}.differing' is {layer.differing}, more than its {layer.elements} elements"
        if layer.equal and layer.differing:
            return f"field '{at}.differing' is {layer.differing} on an operator whose digest equals the host's"
    return None


def _subset_problem(name, subset, summary, finished: bool) -> str | None:
    where = f"subsets.{name}"
    if subset.n > summary.samples:
        return f"field '{where}.n' is {subset.n}, more than its {summary.samples} samples"
    if finished and subset.n and subset.device.accuracy is None and summary.facts.decides_samples:
        return f"field '{where}.device.accuracy' is null in a finished run: the subset was never scored"
    sources = {"device": subset.device} | {f"host.{ref}": score for ref, score in subset.host.items()}
    for source, score in sources.items():
        problem = score_problem(score, f"{where}.{source}", summary.samples)
        if problem:
            return problem
    return None

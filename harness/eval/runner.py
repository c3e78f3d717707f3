"""`harness eval`: stream a subset's samples to a board, run host references, score and store it all."""

import dataclasses
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from harness.boards import Board
from harness.console import progress
from harness.device.fleet import FleetRequest, board_fleet
from harness.device.launch import ConnectOptions
from harness.device.qemu import emulated_instructions
from harness.device.sharding import BoardEnd, ShardedStream
from harness.energy.metering import EvalMetering
from harness.errors import InterruptedRun, LinkError, UserError, setting
from harness.eval.host_work import HostReferences
from harness.eval.inputs import Inputs, prepare_inputs, sample_preparation
from harness.eval.order import shuffle_in_groups
from harness.eval.outputs import NO_DECISION
from harness.eval.perf import run_profile
from harness.eval.run_manifest import check_device_runs_model, check_firmware_origin, check_same_firmware, manifest_of
from harness.eval.run_summary import link_totals, summarise
from harness.eval.sample_rows import RowMaker, read_rows, write_samples
from harness.eval.sampling import DATASET, Selection, select
from harness.eval.settings import EvalSettings
from harness.eval.subsets import Subset
from harness.eval.tasks import task_for
from harness.files import check_output, write_atomically
from harness.firmware.platformio import recorded_build
from harness.firmware.tflm_tree import TflmTree
from harness.link.protocol import DeviceInfo
from harness.link.roles import LayerTracing, Profiling
from harness.model.card import ModelCard
from harness.model.dut import DeviceShare, DutComputation, dut_computation
from harness.model.references import load_references
from harness.model.tflite_file import TfliteModel
from harness.results.journal import (
    JOURNAL,
    Journal,
    WriteFailed,
    known_as,
    load_origin,
    require_same_origin,
    resume_command,
    save_origin,
    save_request,
)
from harness.results.layer_trace import LayerTrace
from harness.results.op_profile import OperatorProfile, OperatorTime
from harness.results.provenance import usb_serial_number
from harness.results.record import RunRecord, write_record
from harness.results.store import RunFolder, hold_run, naming_the_file, new_run_id, open_partial, publish
from harness.results.summary import EvalSummary
from harness.samples import Dataset, Sample


@dataclass(frozen=True)
class EvalRequest:
    """A run to do: its settings as given (harness/eval/settings.py) and what they resolved to."""

    settings: EvalSettings
    card: ModelCard
    model: TfliteModel
    board: Board  # with the link settings applied
    dataset: Dataset
    subsets: list[Subset]
    results_root: Path
    tflm: TflmTree | None = None
    run_id: str | None = None  # set: resume this unfinished run from its journal
    converted_from: dict | None = None  # a float card's source model: its file and sha256 (harness convert)
    boards: int = 1  # how many boards of the kind share the samples (checked against them before any starts)

    @property
    def computation(self) -> DutComputation:
        """What the device computes with the model: what it is sent and what it answers (harness/model/dut.py)."""
        return dut_computation(self.card, self.model)


def _journal_entry(index: int, sample: Sample, result, hosts: dict[str, bytes], instructions, board) -> dict:
    return {
        "index": index,
        "id": sample.id,
        "device_output": result.output.hex(),
        "ticks": result.timing.ticks,
        "tick_hz": result.timing.tick_hz,
        "timer": int(result.timing.kind),
        "host": {name: out.hex() for name, out in hosts.items()},
        "instructions": instructions,  # emulated boards only: exact under QEMU -icount
        "board": board,  # which of the run's boards ran it (harness/device/fleet.py names them)
    }


def _judge(request: EvalRequest):
    """hit(sample, device output): whether the device's class is the sample's label, for the progress line's
    running accuracy, which ends on the accuracy the run reports: only for a run of one subset and over its
    members (an F1 pool's samples are not); None where the task decides no class, the sample has no label or
    is not counted, and always with several subsets (no one figure to end on)."""
    task, spec = task_for(request.card), request.computation.output
    counted = request.subsets[0] if len(request.subsets) == 1 else None

    def hit(sample: Sample, output: bytes) -> bool | None:
        if counted is None or not counted.contains(sample):
            return None
        predicted, _ = task.predict(output, spec)
        return None if predicted == NO_DECISION or sample.label < 0 else predicted == sample.label

    return hit


def _dataset_changed(what: str) -> UserError:
    return UserError(f"{what}: the dataset changed since the run started, or the journal was edited; start a new run")


def _check_journaled(samples: list[Sample], done: dict[int, str]) -> None:
    """The journaled samples are the run's: each index within it, under the same id."""
    for index, sample_id in done.items():
        if index >= len(samples):
            raise _dataset_changed(f"journal.jsonl holds sample {index}, the run has {len(samples)}")
        if sample_id != samples[index].id:
            expected = samples[index].id
            raise _dataset_changed(f"journal.jsonl's sample {index} is {sample_id!r}, the dataset's is {expected!r}")


def _stream(request: EvalRequest, inputs: Inputs, references, journal: Journal, origin: dict, metering=None):
    """Every sample through the run's boards and the host references: a Streamed. Samples already in the
    journal are not run again; each new one is journaled as it arrives. `origin` is what the run started
    with: the firmware at this HELLO must be the journal's."""
    done = journal.done()
    _check_journaled(inputs.samples, done)
    todo = [i for i in range(len(inputs.samples)) if i not in done]
    settings = request.settings
    options = ConnectOptions.named_by(
        settings,
        tflm=request.tflm,
        eembc=request.card.eembc,
        computation=request.computation,
        roles=_roles(settings),
    )
    fleet = FleetRequest(settings.boards, settings.labgrid_tags)
    hit = _judge(request)
    with (
        # each host reference computes what the device computes, on a thread of its own, ahead of the board
        HostReferences(references, options.computation, inputs.tensors, todo) as host,
        board_fleet(request.board, request.model, options, fleet) as members,
    ):
        share = members[0].driver.share  # what the device does of the computation; the host does the rest
        with ShardedStream(members, inputs.tensors, todo, last=_profiler(request, inputs, share)) as shards:
            infos = shards.ready()
            info = check_same_firmware(infos)
            reflash = members[0].driver.reflash_advice()
            check_device_runs_model(info, request.model, share.tensors, request.board, reflash)
            check_firmware_origin(journal.path.parent, origin, info.build_id)
            with metering or nullcontext(), progress(len(todo), f"eval {request.board.id}") as advance:
                shards.go()  # after the meter's idle measurement
                for arrival in shards.arrivals():
                    index, result = arrival.index, arrival.result
                    if metering:
                        metering.record(arrival.last_invoke, arrival.last_device_window)
                    instructions = emulated_instructions(result.timing.ticks, result.timing.tick_hz, request.board)
                    entry = _journal_entry(
                        index, inputs.samples[index], result, host.outputs(index), instructions, arrival.board
                    )
                    journal.append(entry)
                    advance(hit=hit(inputs.samples[index], result.output))
        traces = _trace_departures(request, inputs, journal, references, members[0], info)
    ends = list(shards.ends.values())
    first = ends[0]
    firmware = first.firmware or recorded_build(info.build_id)
    stats = link_totals([end.stats or {} for end in ends]) | {"samples_from_journal": len(done)}
    return Streamed(
        samples=len(inputs.samples),
        info=info,
        link=stats,
        firmware=firmware,
        board_serial=usb_serial_number(first.port) if len(ends) == 1 else None,
        boards=ends,
        profile=shards.last_answer,
        layer_traces=traces,
    )


def _roles(settings: EvalSettings) -> tuple[type, ...]:
    """What the run asks of its boards beyond samples (refused before a board starts where one cannot)."""
    return (*((Profiling,) if settings.profile else ()), *((LayerTracing,) if settings.trace_layers else ()))


def _trace_departures(request: EvalRequest, inputs: Inputs, journal: Journal, references, member, info) -> list:
    """With --trace-layers N: the first N samples whose output differs from the first host reference's, each
    traced layer by layer on one of the run's boards in a session of its own, once every sample is in."""
    limit = request.settings.trace_layers
    if not limit or not references:
        return []
    from harness.eval.layer_diff import departing_samples, trace_departures  # the host interpreters: only here

    departing = departing_samples(journal.tables(), references[0].name, limit)
    if not departing:
        return []
    with member.driver.session() as client:
        check_same_firmware({member.name: info, f"{member.name} (its layer trace)": client.info})
        return trace_departures(client, request, inputs, departing, member.driver.share)


def _profiler(request: EvalRequest, inputs: Inputs, share: DeviceShare):
    """With --profile: the request that times the run's first sample operator by operator, as an OperatorProfile."""
    if not request.settings.profile:
        return None
    sample, board = inputs.samples[0], request.board

    def profile(client) -> OperatorProfile:
        report = run_profile(client, board, share.sent(inputs.tensors[0]))
        return OperatorProfile(
            source=report.total.source,
            unit=report.total.unit,
            board=board.id,
            sample=sample.id,
            total=float(report.total.value or 0),
            operators=[OperatorTime(operator=name, value=float(f.value or 0)) for name, f in report.operators],
            operators_run=report.operators_run,
        )

    return profile


def _count(samples: int) -> str:
    return f"{samples} sample{'' if samples == 1 else 's'}"


RUN_FILES = ("samples.parquet", "energy.parquet", "power.parquet", "manifest.json", "summary.json")


@dataclass(frozen=True)
class OpenRun:
    """The run's partial folder, opened or found again, and what the run started with."""

    id: str
    folder: RunFolder
    origin: dict  # harness/results/journal.py origin.json
    started: str


@dataclass(frozen=True)
class Streamed:
    """What the board gave: the board's figures; every sample (journaled ones included) is in the journal."""

    samples: int
    info: DeviceInfo
    link: dict
    firmware: dict | None
    board_serial: str | None
    boards: list[BoardEnd]  # each board's part: samples, link, failure
    profile: OperatorProfile | None = None  # --profile: the first sample timed operator by operator
    layer_traces: list[LayerTrace] = dataclasses.field(default_factory=list)  # --trace-layers N


@dataclass(frozen=True)
class EvalOutcome:
    summary: EvalSummary
    run_dir: Path


def _order(request: EvalRequest) -> str:
    """Windows scored over whole files keep the dataset's order: a drawn window would cut every file."""
    return DATASET if task_for(request.card).scores_files else request.settings.order


def _selection(request: EvalRequest) -> Selection:
    settings = request.settings
    selection = select(
        request.dataset.samples, request.subsets, settings.limit, _order(request), settings.seed, settings.pools
    )
    if not any(subset.contains(sample) for sample in selection.samples for subset in request.subsets):
        names = ", ".join(s.name for s in request.subsets)
        raise UserError(f"dataset {request.dataset.name} has no samples in {names}; choose other subsets")
    if settings.order_seed is None:
        return selection
    order = shuffle_in_groups(len(selection.samples), settings.order_seed)
    return dataclasses.replace(selection, samples=[selection.samples[i] for i in order])


def _open_run(request: EvalRequest, inputs: Inputs, run_id: str, folder: RunFolder) -> OpenRun:
    """A new run's partial folder (held) given its settings and origin, or a resumed run's, checked against them."""
    inputs_origin = {
        "model_sha256": request.model.sha256,
        "labels_sha256": request.dataset.csv_sha256,
        "inputs_key": inputs.key,
    }
    if request.run_id is None:
        origin = inputs_origin | {"started": datetime.now(UTC).isoformat()}
        try:
            save_request(folder.path, request.settings.stored())
            save_origin(folder.path, origin)
        except OSError as exc:  # a full disk: a run that cannot start leaves nothing
            folder.discard()
            raise UserError(
                f"cannot create run {run_id} in {request.results_root} ({exc.strerror or exc}); nothing was kept: "
                f"free some space or pass another {setting('results')}"
            ) from exc
    else:  # before any sample runs: journaled outputs only count for the same model and inputs
        origin = load_origin(folder.path)
        require_same_origin(origin, inputs_origin)
        for name in RUN_FILES:  # a FIFO or a folder where a run file goes is refused now, not after every sample
            check_output(folder.path / name, "run file", follow_links=False)
    return OpenRun(run_id, folder, origin, datetime.fromisoformat(origin["started"]).isoformat())


def _stream_journaled(request: EvalRequest, run: OpenRun, inputs: Inputs, refs, metering) -> Streamed:
    """Every sample through the board, journaled as it arrives; an interrupted run is left resumable (or, with
    nothing journaled, not left at all: a failed start, at the handshake or before, leaves nothing)."""
    journal = Journal(run.folder.path)
    try:
        return _stream(request, inputs, refs.references, journal, run.origin, metering)
    except BaseException as exc:
        journal.close()
        kept = _kept(journal)
        if request.run_id is None and kept == 0:  # nothing to resume: leave nothing behind
            run.folder.discard()
            if isinstance(exc, WriteFailed) or _in_run_folder(exc, run):
                raise _nothing_kept(exc, request, run) from exc
            raise
        resumable = _resumable(exc, run, kept)
        if resumable is exc:
            raise
        raise resumable from None
    finally:
        journal.close()


def _nothing_kept(exc: OSError | WriteFailed, request: EvalRequest, run: OpenRun) -> UserError:
    path, reason = (exc.path, exc.reason) if isinstance(exc, WriteFailed) else (exc.filename, exc.strerror or exc)
    return UserError(
        f"cannot write {Path(path).name} of run {run.id} in {request.results_root} ({reason}); nothing was kept: "
        "free some space, then run again"
    )


def _kept(journal: Journal) -> int | None:
    """How many samples the journal holds (None: it cannot be read, so it is kept as it is)."""
    try:
        return len(journal.done())
    except UserError:
        return None


def _resumable(exc: BaseException, run: OpenRun, kept: int | None) -> BaseException:
    """exc, worded with the command that goes on with the run (a damaged journal's own message names its line)."""
    go_on = f"`{resume_command(run.folder.path)}` goes on"
    if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, InterruptedRun):
        return InterruptedRun(f"{_count(kept) if kept is not None else 'the samples done are'} kept; {go_on}")
    if isinstance(exc, LinkError):
        return LinkError(f"{exc.args[0]} (the samples done are kept: {go_on})")
    if _in_run_folder(exc, run):  # a file of the run could not be written (a full disk)
        return _write_failed(exc, run)
    return exc


def _in_run_folder(exc: BaseException, run: OpenRun) -> bool:
    """An OSError of a file in the run's folder (not the board's port, nor an input file)."""
    if not isinstance(exc, OSError) or not isinstance(exc.filename, str):
        return False
    return Path(exc.filename).is_relative_to(run.folder.path)


def _write_failed(exc: OSError, run: OpenRun) -> UserError:
    """A file of the run could not be written: named, with the command that goes on once it can be."""
    return UserError(
        f"cannot write {known_as(Path(exc.filename))} ({exc.strerror or exc}); every sample done is kept: "
        f"free some space, then `{resume_command(run.folder.path)}` goes on"
    )


def _check_boards_fit(request: EvalRequest, samples: int) -> None:
    """Before any board starts: every board of the run gets a sample at least."""
    if request.boards > samples:
        given = request.settings.boards == request.boards
        boards = f"{setting('boards')} {request.boards}" if given else f"{request.boards} boards"
        raise UserError(
            f"{boards} but the run has {_count(samples)}; use at most {samples} board{'s' if samples > 1 else ''}"
        )


def run_eval(request: EvalRequest) -> EvalOutcome:
    selection = _selection(request)
    samples = selection.samples
    _check_boards_fit(request, len(samples))
    meter = request.settings.meter
    metering = EvalMetering(meter) if meter else None  # a bad meter fails before the board starts
    # Before the board starts: a card that does not fit the model fails here, and images decode once.
    preparation = sample_preparation(request.card, request.computation, request.model)
    inputs = prepare_inputs(request.dataset, samples, preparation, request.settings.strict)
    refs = load_references(request.model, request.settings.references)
    run_id = request.run_id or new_run_id(request.card.name, request.board.id)
    folder = open_partial(request.results_root, run_id, resume=request.run_id is not None)
    try:
        with hold_run(folder.path):  # a second eval --resume of this run is refused while this one writes it
            run = _open_run(request, inputs, run_id, folder)
            streamed = _stream_journaled(request, run, inputs, refs, metering)
            return _store(request, run, streamed, selection, inputs, refs, metering)
    except UserError:
        if request.run_id is None and not (folder.path / JOURNAL).exists():
            folder.discard()  # it never got going (the lock could not be taken): leave nothing
        raise


def _store(request: EvalRequest, run: OpenRun, streamed: Streamed, selection, inputs, refs, metering) -> EvalOutcome:
    """The run's tables and record from its journal, then the run folder published."""
    names = [ref.name for ref in refs.references]
    try:  # every sample is journaled: from here on, an interrupted run only has to be written
        samples_path = run.folder.path / "samples.parquet"
        maker = RowMaker(
            inputs.samples,
            task_for(request.card),
            request.computation,
            names,
            request.subsets,
            selection,
            request.board.latency_source,
        )
        with naming_the_file(samples_path):
            journal = Journal(run.folder.path)
            write_atomically(
                samples_path, lambda partial: write_samples(partial, journal, maker), "run file", follow_links=False
            )
        readings = read_rows(samples_path, names)
        manifest = manifest_of(request, run, streamed, inputs, refs, metering, selection, _order(request))
        summary = summarise(request, run, streamed, readings, refs, inputs, metering, selection)
        if metering:
            run.folder.write_table("energy.parquet", metering.columns())
            run.folder.write_table("power.parquet", metering.power_columns())
        write_record(run.folder, RunRecord(manifest, summary))
        return EvalOutcome(summary, publish(request.results_root, run.id))
    except KeyboardInterrupt:
        go_on = f"`{resume_command(run.folder.path)}` goes on"
        raise InterruptedRun(f"{_count(streamed.samples)} kept; {go_on}") from None
    except OSError as exc:
        if not _in_run_folder(exc, run):
            raise
        raise _write_failed(exc, run) from exc

"""`harness eval`: stream a subset's samples to a board, run host references, score and store it all."""

import shutil
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from harness.boards import Board
from harness.console import progress
from harness.device.launch import ConnectOptions, connect
from harness.device.qemu import emulated_instructions
from harness.energy.metering import EvalMetering
from harness.errors import InterruptedRun, LinkError, UserError
from harness.eval.inputs import Inputs, prepare_inputs
from harness.eval.metrics import pool_size, score
from harness.eval.order import shuffle_in_groups
from harness.eval.outputs import diff_steps, diff_unit
from harness.eval.subsets import Subset, select_samples
from harness.eval.tasks import task_for
from harness.firmware.platformio import recorded_build
from harness.firmware.tflm_tree import TflmTree
from harness.link.faults import FaultSpec
from harness.link.protocol import DeviceInfo, TickKind, Timing
from harness.model.card import ModelCard
from harness.model.deployable import require_tflm_kernels
from harness.model.references import DEFAULT_REFERENCES, load_references
from harness.model.tflite_file import TfliteModel
from harness.results.journal import Journal, load_origin, require_same_origin, save_origin, save_request
from harness.results.provenance import harness_source, host_machine, subset_content_hashes, usb_serial_number
from harness.results.store import new_run_id, open_partial, publish
from harness.samples import Dataset, Sample


@dataclass(frozen=True)
class EvalRequest:
    card: ModelCard
    model: TfliteModel
    board: Board
    dataset: Dataset
    subsets: list[Subset]
    limit: int | None
    port: str | None
    results_root: Path
    reference_names: tuple[str, ...] = DEFAULT_REFERENCES
    tflm: TflmTree | None = None
    serial_number: str | None = None
    pools: bool = False  # also stream each subset's F1 negative pool (needed for f1_wv)
    strict: bool = False  # an unreadable image stops the run instead of being skipped and counted
    meter: str | None = None  # KIND:ADDRESS of a power meter (harness/energy)
    order_seed: int | None = None  # shuffle the sample order in small groups (LPIRC style)
    protocol: str = "harness"  # or "eembc": MLPerf Tiny / EEMBC DUT firmware (docs/eembc.md)
    faults: FaultSpec | None = None  # inject link faults through a proxy (harness/link/faults.py)
    run_id: str | None = None  # set: resume this unfinished run from its journal
    settings: dict | None = None  # the command-line settings, kept with the run for --resume
    labgrid_place: str | None = None  # a board in a labgrid farm (harness/device/labgrid_place.py)
    converted_from: dict | None = None  # a float card's source model: its file and sha256 (harness convert)


@dataclass
class SampleRecord:
    sample: Sample
    device_output: bytes
    timing: Timing
    host_outputs: dict[str, bytes]
    instructions: int | None  # emulated boards only: exact under QEMU -icount

    @property
    def micros(self) -> float | None:
        """Real time only: an emulator's virtual time is not presented as latency."""
        return None if self.instructions is not None else self.timing.micros


def _check_device_runs_model(info: DeviceInfo, model: TfliteModel, board: Board) -> None:
    if info.runner_status != 0:
        require_tflm_kernels(model)  # names the operators when that is why
        raise UserError(f"the model failed to load on {board.id} (runner status {info.runner_status})")
    if info.model_sha256_prefix and info.model_sha256_prefix != model.sha256[:16]:  # EEMBC DUTs report none
        raise UserError(
            f"{board.id} runs model {info.model_sha256_prefix}…, not {model.sha256[:16]}… "
            f"({model.path.name}): run `harness flash --board {board.id}` with this model first"
        )
    if not (info.input.same_layout(model.input) and info.output.same_layout(model.output)):
        raise UserError(
            f"{board.id} reports tensors {info.input.describe()} -> {info.output.describe()}, the model has "
            f"{model.input.describe()} -> {model.output.describe()}: reflash the board"
        )


def _journal_entry(index: int, record: SampleRecord) -> dict:
    return {
        "index": index,
        "id": record.sample.id,
        "device_output": record.device_output.hex(),
        "ticks": record.timing.ticks,
        "tick_hz": record.timing.tick_hz,
        "timer": int(record.timing.kind),
        "host": {name: out.hex() for name, out in record.host_outputs.items()},
        "instructions": record.instructions,
    }


def _dataset_changed(what: str) -> UserError:
    return UserError(f"{what}: the dataset changed since the run started; start a new run")


def _journaled_record(samples: list[Sample], entry: dict) -> SampleRecord:
    index = entry["index"]
    if index >= len(samples):
        raise _dataset_changed(f"the journal holds sample {index}, the run has {len(samples)}")
    sample = samples[index]
    if entry["id"] != sample.id:
        raise _dataset_changed(f"the journal's sample {index} is {entry['id']}, the dataset's is {sample.id}")
    timing = Timing(entry["ticks"], entry["tick_hz"], TickKind(entry["timer"]))
    hosts = {name: bytes.fromhex(out) for name, out in entry["host"].items()}
    return SampleRecord(sample, bytes.fromhex(entry["device_output"]), timing, hosts, entry["instructions"])


def _stream(request: EvalRequest, inputs: Inputs, references, journal: Journal, origin: dict, metering=None):
    """Every sample through the board and the host references: (records, HELLO, link stats, firmware).
    Samples already in the journal are taken from it; each new one is journaled as it arrives.
    `origin` is what the run started with: the firmware at this HELLO must be the journal's."""
    records = {i: _journaled_record(inputs.samples, entry) for i, entry in journal.load().items()}
    todo = [i for i in range(len(inputs.samples)) if i not in records]
    board, model = request.board, request.model
    options = ConnectOptions(
        port=request.port,
        serial_number=request.serial_number,
        protocol=request.protocol,
        faults=request.faults,
        labgrid_place=request.labgrid_place,
        tflm=request.tflm,
        uses=("run_stream",),
    )
    with connect(board, model, options) as client:
        _check_device_runs_model(client.info, request.model, request.board)
        _check_firmware_origin(journal.path.parent, origin, client.info.build_id)
        with metering or nullcontext(), progress(len(todo), f"eval {request.board.id}") as advance:
            # Pipelined where the device has two input slots: sample k+1 streams while k is inferred.
            results = client.run_stream(inputs.tensors[i].tobytes() for i in todo)
            for index, result in zip(todo, results, strict=True):
                tensor = inputs.tensors[index]
                if metering:
                    metering.record(client.last_invoke, client.last_device_window)
                hosts = {ref.name: ref.run(tensor) for ref in references}
                instructions = emulated_instructions(result.timing.ticks, result.timing.tick_hz, request.board)
                record = SampleRecord(inputs.samples[index], result.output, result.timing, hosts, instructions)
                journal.append(_journal_entry(index, record))
                records[index] = record
                advance()
        board_serial = usb_serial_number(getattr(client.port, "port", None))
        firmware = client.firmware or recorded_build(client.info.build_id)
        stats = vars(client.stats) | {"samples_from_journal": len(inputs.samples) - len(todo)}
        return [records[i] for i in range(len(inputs.samples))], client.info, stats, firmware, board_serial


def _check_firmware_origin(folder: Path, recorded: dict, build_id: str) -> None:
    """The first HELLO of a run records the firmware; a resume must meet the same firmware."""
    if "firmware_build_id" in recorded:
        require_same_origin(recorded, {"firmware_build_id": build_id})
    else:
        recorded["firmware_build_id"] = build_id
        save_origin(folder, recorded)


def _stats(values: list[int]) -> dict | None:
    if not values:
        return None
    array = np.asarray(values, dtype=np.float64)
    return {
        "min": float(array.min()),
        "median": float(np.median(array)),
        "p90": float(np.percentile(array, 90)),
        "max": float(array.max()),
    }


@dataclass
class Readings:
    """Every output read once: predictions and scores for device and hosts, device-host differences."""

    device: tuple[np.ndarray, np.ndarray]  # (predictions, scores)
    host: dict[str, tuple[np.ndarray, np.ndarray]]
    diffs: dict[str, np.ndarray]


def _read_outputs(request: EvalRequest, records: list[SampleRecord], names: list[str]) -> Readings:
    model, task = request.model, task_for(request.card)

    def read(outputs):
        pairs = [task.predict(raw, model.output) for raw in outputs]
        return np.array([p for p, _ in pairs]), np.array([s for _, s in pairs])

    return Readings(
        device=read(r.device_output for r in records),
        host={n: read(r.host_outputs[n] for r in records) for n in names},
        diffs={
            n: np.array(
                [diff_steps(r.device_output, r.host_outputs[n], model.output, model.output_step) for r in records]
            )
            for n in names
        },
    )


def _summarise(request: EvalRequest, records: list[SampleRecord], readings: Readings, info: DeviceInfo, refs) -> dict:
    model = request.model
    names = [ref.name for ref in refs.references]
    primary = names[0] if names else None
    device_pred = readings.device[0]
    host_pred = {n: readings.host[n][0] for n in names}
    diffs = readings.diffs
    samples = [r.sample for r in records]
    subsets = {}
    for subset in request.subsets:
        members = np.array([subset.contains(sample) for sample in samples], dtype=bool)
        pool = pool_size(subset, request.dataset.samples)  # over the whole dataset, not just this run
        subsets[subset.name] = {
            "n": int(members.sum()),
            "positive_class": task_for(request.card).class_name(subset),
            "device": score(subset, samples, device_pred, pool).as_dict(),
            "host": {n: score(subset, samples, host_pred[n], pool).as_dict() for n in names},
            "versus": {
                n: {
                    "agreement": float(np.mean(device_pred[members] == host_pred[n][members]))
                    if members.any()
                    else None,
                    "max_diff_steps": float(diffs[n][members].max()) if members.any() else None,
                }
                for n in names
            },
        }
    source = request.board.latency_source
    return {
        "model": request.card.name,
        "model_caveat": request.card.caveat or None,
        "board": request.board.id,
        "dataset": request.dataset.name,
        "samples": len(records),
        "subsets": subsets,
        "primary_reference": primary,
        "bit_exact": {n: int(sum(r.device_output == r.host_outputs[n] for r in records)) for n in names},
        "output_diff_unit": diff_unit(model.output, model.output_step),
        "latency": {
            "source": source,
            "timer": info.tick_kind.name.lower(),
            "micros": _stats([r.micros for r in records if r.micros is not None]),
            "cycles": _stats([r.timing.cycles for r in records if r.timing.cycles is not None]),
            "instructions": _stats([r.instructions for r in records if r.instructions is not None]),
            "cpu_hz": info.cpu_hz or None,
        },
        # 0 from a DUT means it did not report the figure: no model runs in an empty arena.
        "arena": {"source": source, "configured": info.arena_configured or None, "used": info.arena_used or None},
        "references": {"used": names, "refused": refs.refused},
        "task": request.card.task,
        "confusion": _confusion(request, samples, device_pred, host_pred)
        if request.card.task != "image_classification"
        else None,
    }


def _confusion(request: EvalRequest, samples, device_pred, host_pred) -> dict:
    """Rows: the true class; columns: the predicted one (multi-class tasks)."""
    labels = request.card.output.labels
    truth = np.array([s.label for s in samples])

    def matrix(predictions) -> list[list[int]]:
        counts = np.zeros((len(labels), len(labels)), dtype=np.int64)
        np.add.at(counts, (truth, np.asarray(predictions)), 1)
        return counts.tolist()

    return {"labels": list(labels), "device": matrix(device_pred)} | {n: matrix(p) for n, p in host_pred.items()}


def _sample_columns(request: EvalRequest, records: list[SampleRecord], readings: Readings) -> dict[str, list]:
    columns: dict[str, list] = {
        "sample_id": [r.sample.id for r in records],
        "label": [r.sample.label for r in records],
    }
    for subset in request.subsets:
        columns[f"in_{subset.name}"] = [subset.contains(r.sample) for r in records]
    for flag in records[0].sample.flags if records else ():
        columns[f"flag_{flag}"] = [r.sample.flags[flag] for r in records]
    predictions, scores = readings.device
    columns |= {
        "device_output": [r.device_output for r in records],
        "device_prediction": predictions.tolist(),
        "device_score": scores.tolist(),
    }
    for name, (predictions, scores) in readings.host.items():
        columns[f"{name}_output"] = [r.host_outputs[name] for r in records]
        columns[f"{name}_prediction"] = predictions.tolist()
        columns[f"{name}_score"] = scores.tolist()
        columns[f"{name}_max_diff_steps"] = readings.diffs[name].tolist()
    columns["ticks"] = pa.array([r.timing.ticks for r in records], type=pa.int64())
    columns["tick_hz"] = [r.timing.tick_hz for r in records]
    columns["timer"] = [r.timing.kind.name.lower() for r in records]
    columns["cycles"] = pa.array([r.timing.cycles for r in records], type=pa.int64())
    columns["microseconds"] = pa.array([r.micros for r in records], type=pa.float64())
    columns["instructions"] = pa.array([r.instructions for r in records], type=pa.int64())
    columns["latency_source"] = [request.board.latency_source] * len(records)
    return columns


def _count(samples: int) -> str:
    return f"{samples} sample{'' if samples == 1 else 's'}"


def run_eval(request: EvalRequest) -> dict:
    samples = select_samples(request.dataset.samples, request.subsets, request.limit, request.pools)
    if request.order_seed is not None:
        samples = [samples[i] for i in shuffle_in_groups(len(samples), request.order_seed)]
    if not samples:
        names = ", ".join(s.name for s in request.subsets)
        raise UserError(f"dataset {request.dataset.name} has no samples in {names}; choose other subsets")
    metering = EvalMetering(request.meter) if request.meter else None  # a bad meter fails before the board starts
    # Before the board starts: a card that does not fit the model fails here, and images decode once.
    preparation = task_for(request.card).preparation(request.model.input)
    inputs = prepare_inputs(request.dataset, samples, preparation, request.strict)
    refs = load_references(request.model, request.reference_names)
    run_id = request.run_id or new_run_id(request.card.name, request.board.id)
    folder = open_partial(request.results_root, run_id, resume=request.run_id is not None)
    inputs_origin = {
        "model_sha256": request.model.sha256,
        "labels_sha256": request.dataset.csv_sha256,
        "inputs_key": inputs.key,
    }
    if request.run_id is None:
        origin = inputs_origin | {"started": datetime.now(UTC).isoformat()}
        save_request(folder.path, request.settings or {})
        save_origin(folder.path, origin)
    else:  # before any sample runs: journaled outputs only count for the same model and inputs
        origin = load_origin(folder.path)
        require_same_origin(origin, inputs_origin)
    started = datetime.fromisoformat(origin["started"])
    journal = Journal(folder.path)
    try:
        records, info, link_stats, firmware, board_serial = _stream(
            request, inputs, refs.references, journal, origin, metering
        )
    except UserError:
        journal.close()
        if request.run_id is None and not journal.load():  # nothing to resume: leave nothing behind
            shutil.rmtree(folder.path, ignore_errors=True)
        raise
    except LinkError as exc:
        raise LinkError(f"{exc} (the samples done are kept: `harness eval --resume {run_id}` goes on)") from exc
    except KeyboardInterrupt:
        journal.close()
        kept = len(journal.load())
        if request.run_id is None and not kept:
            shutil.rmtree(folder.path, ignore_errors=True)
            raise
        raise InterruptedRun(f"{_count(kept)} kept; `harness eval --resume {run_id}` goes on") from None
    finally:
        journal.close()
    try:
        finished = datetime.now(UTC)
        readings = _read_outputs(request, records, [ref.name for ref in refs.references])
        summary = _summarise(request, records, readings, info, refs)
        summary["run_id"] = run_id
        summary["link"] = link_stats
        summary["unreadable_images"] = {"count": len(inputs.unreadable), "first": inputs.unreadable[:20]}
        summary["inputs_from_cache"] = inputs.from_cache
        if metering:
            summary["energy"] = metering.summary()
        manifest = {
            "run_id": run_id,
            "harness": harness_source(),
            "started": started.isoformat(),
            "finished": finished.isoformat(),
            "model": {
                "card": request.card.name,
                "file": str(request.model.path),
                "sha256": request.model.sha256,
                "bytes": len(request.model.data),
                "card_file": str(request.card.card_path),
                "input": request.model.input.describe(),
                "output": request.model.output.describe(),
                "converted_from": request.converted_from,
            },
            "board": {
                "id": request.board.id,
                "kind": request.board.kind,
                "latency_source": request.board.latency_source,
                "usb_serial_number": board_serial,
                "flash_bytes": request.board.memory.flash_bytes,
                "ram_bytes": request.board.memory.ram_bytes,
            },
            "device": {
                "board_id": info.board_id,
                "firmware_build_id": info.build_id,
                "protocol_version": info.protocol_version,
                "model_sha256_prefix": info.model_sha256_prefix,
                "arena_configured": info.arena_configured or None,
                "arena_used": info.arena_used or None,
                "cpu_hz": info.cpu_hz,
                "timer": {"kind": info.tick_kind.name.lower(), "hz": info.tick_hz},
                "firmware": firmware,  # how harness built it (emulated boards); None when it did not
            },
            "dataset": {
                "name": request.dataset.name,
                "labels": str(request.dataset.csv_path),
                "labels_sha256": request.dataset.csv_sha256,
                "subsets": [s.name for s in request.subsets],
                "subset_content_sha256": subset_content_hashes(inputs.samples, request.subsets),
                "limit": request.limit,
                "order_seed": request.order_seed,
            },
            "references": {r.name: r.description for r in refs.references} | {"refused": refs.refused},
            "host": host_machine(),
        }
        if metering:
            trace = metering.trace
            manifest["meter"] = {"spec": request.meter, "identity": trace.meter, "source": trace.source}
            folder.write_table("energy.parquet", metering.columns())
            folder.write_table("power.parquet", metering.power_columns())
        folder.write_table("samples.parquet", _sample_columns(request, records, readings))
        folder.write_json("manifest.json", manifest)
        folder.write_json("summary.json", summary)
        publish(request.results_root, run_id)
        summary["run_dir"] = str(request.results_root / run_id)
        return summary
    except KeyboardInterrupt:  # every sample is journaled: the resume only writes the run
        raise InterruptedRun(f"{_count(len(records))} kept; `harness eval --resume {run_id}` goes on") from None

"""An eval run's summary (harness/results/summary.py EvalSummary): its figures from the columns of the stored
rows (harness/eval/sample_rows.py) and the run's samples — scores per subset, latency, arena, confusion,
anomaly, each board's share and the link's counters over the boards."""

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from harness.device.sharding import BoardEnd
from harness.eval.anomaly import anomaly_score, windows_per_file
from harness.eval.metrics import pool_of, score
from harness.eval.outputs import diff_unit
from harness.eval.sample_rows import StoredRows
from harness.eval.tasks import task_for
from harness.link.protocol import DeviceInfo
from harness.results.provenance import usb_serial_number
from harness.results.schema import parse
from harness.results.summary import (
    Anomaly,
    Arena,
    BoardIdentity,
    BoardShare,
    Confusion,
    Energy,
    EvalSummary,
    Latency,
    References,
    Retirement,
    Score,
    Stats,
    SubsetResult,
    Unreadable,
    Versus,
)
from harness.samples import Dataset, Sample

if TYPE_CHECKING:
    from harness.eval.runner import EvalRequest, OpenRun, Streamed


# Counters add up over a sharded run's boards; the others are each board's state (the largest is kept).
_STATE_FIELDS = ("baud", "chunk_bytes", "byte_error_rate")


def link_totals(boards: list[dict]) -> dict:
    """The link's counters of a run over its boards (one board: its own)."""
    if len(boards) == 1:
        return boards[0]
    totals: dict = {}
    for stats in boards:
        for name, value in stats.items():
            if name == "faults_injected":
                if value:
                    injected = totals.setdefault(name, {})
                    for kind, count in value.items():
                        injected[kind] = injected.get(kind, 0) + count
            elif name in _STATE_FIELDS:
                totals[name] = max(totals.get(name, value), value)
            else:
                totals[name] = totals.get(name, 0) + value
    return totals


def _stats(values: list[int]) -> Stats | None:
    if not values:
        return None
    array = np.asarray(values, dtype=np.float64)
    return Stats(
        min=float(array.min()),
        median=float(np.median(array)),
        p90=float(np.percentile(array, 90)),
        max=float(array.max()),
    )


def summarise(
    request: "EvalRequest",
    run: "OpenRun",
    streamed: "Streamed",
    readings: StoredRows,
    refs,
    inputs,
    metering,
    selection,
):
    """The summary, from the columns of the stored rows and the run's samples."""
    computed, info, samples = request.computation, streamed.info, inputs.samples
    names = [ref.name for ref in refs.references]
    device_pred = readings.device[0]
    host_pred = {n: readings.host[n][0] for n in names}
    diffs = readings.diffs
    task = task_for(request.card)
    subsets = {}
    for subset in request.subsets:
        members = selection.member_mask(subset, samples)  # its own draw, not others' members nor its pool
        pool = pool_of(subset, request.dataset)  # over the whole dataset, not just this run
        left_out = selection.pool_left_out.get(subset.name)
        drawn = (pool, left_out, members)
        subsets[subset.name] = SubsetResult(
            n=int(members.sum()),
            positive_class=task.class_name(subset),
            device=score(subset, samples, device_pred, *drawn) if task.facts.decides_samples else Score(),
            host={
                n: score(subset, samples, host_pred[n], *drawn) if task.facts.decides_samples else Score()
                for n in names
            },
            versus={
                n: Versus(
                    agreement=float(np.mean(device_pred[members] == host_pred[n][members]))
                    if members.any() and task.facts.decides_samples
                    else None,
                    max_diff_steps=float(diffs[n][members].max()) if members.any() else None,
                )
                for n in names
            },
            pool_added=selection.pool_added.get(subset.name, 0),
        )
    source = request.board.latency_source
    return EvalSummary(
        model=request.card.name,
        model_caveat=request.card.caveat or None,
        board=request.board.id,
        dataset=request.dataset.name,
        synthetic=request.dataset.synthetic,
        samples=len(samples),
        subsets=subsets,
        primary_reference=names[0] if names else None,
        bit_exact=readings.bit_exact,
        output_diff_unit=diff_unit(computed.output, computed.step),
        latency=_latency(request, readings, np.ones(len(samples), dtype=bool), info),
        # 0 from a DUT means it did not report the figure: no model runs in an empty arena.
        arena=Arena(source=source, configured=info.arena_configured or None, used=info.arena_used or None),
        references=References(used=names, refused=refs.refused),
        task=task.name,
        task_facts=task.facts,
        confusion=_confusion(request, samples, device_pred, host_pred) if task.confusion else None,
        anomaly=_anomaly(samples, readings, request.dataset) if task.scores_files else None,
        run_id=run.id,
        link=streamed.link,
        unreadable_images=Unreadable(count=len(inputs.unreadable), first=inputs.unreadable[:20]),
        inputs_from_cache=inputs.from_cache,
        energy=parse(Energy, metering.summary()) if metering else None,
        boards=_board_shares(request, readings, streamed.boards, info) if len(streamed.boards) > 1 else [],
        profile=streamed.profile,
        layer_traces=streamed.layer_traces,
    )


def _anomaly(samples: list[Sample], readings: StoredRows, dataset: Dataset) -> Anomaly:
    """Each source's window scores over files: AUC and the runner's Top-1, over whole files only."""
    whole = windows_per_file(list(dataset.samples))
    return Anomaly(
        device=anomaly_score(samples, readings.device[1], whole),
        host={name: anomaly_score(samples, scores, whole) for name, (_, scores) in readings.host.items()},
    )


def _figures(values: np.ndarray) -> Stats | None:
    """Stats of the samples that have the figure (NaN: none)."""
    present = values[~np.isnan(values)]
    return _stats(present.tolist())


def _latency(request: "EvalRequest", readings: StoredRows, rows: np.ndarray, info: DeviceInfo) -> Latency:
    """Over `rows` (a mask of the run's samples)."""
    return Latency(
        source=request.board.latency_source,
        timer=info.tick_kind.name.lower(),
        micros=_figures(readings.micros[rows]),
        cycles=_figures(readings.cycles[rows]),
        instructions=_figures(readings.instructions[rows]),
        cpu_hz=info.cpu_hz or None,
    )


def _board_shares(request: "EvalRequest", readings: StoredRows, ends: list[BoardEnd], info) -> list[BoardShare]:
    """Each board's samples (journaled ones included, by the board the journal names) and latency."""
    by_name = {end.name: end for end in ends}
    ran = set(readings.board.tolist()) - {None}
    earlier = sorted(ran - set(by_name))  # before a resume
    shares = []
    for name in [*by_name, *earlier]:
        mine = readings.board == name
        end = by_name.get(name, BoardEnd(name))
        latency = _latency(request, readings, mine, end.info or info) if mine.any() else None
        shares.append(
            BoardShare(
                name=name,
                usb_serial_number=usb_serial_number(end.port),
                samples=int(mine.sum()),
                latency=latency,
                link=end.stats or {},
                failure=end.failure,
                retired=_retirement(end),
            )
        )
    return shares


def _retirement(end: BoardEnd) -> Retirement | None:
    if end.retired is None:
        return None
    expected, said = (dataclasses.asdict(identity) if identity else None for identity in end.retired)
    return Retirement(expected=BoardIdentity(**expected), said=BoardIdentity(**said) if said else None)


def _confusion(request: "EvalRequest", samples, device_pred, host_pred) -> Confusion:
    """Rows: the true class; columns: the predicted one (multi-class tasks)."""
    labels = request.card.output.labels
    truth = np.array([s.label for s in samples])

    def matrix(predictions) -> list[list[int]]:
        counts = np.zeros((len(labels), len(labels)), dtype=np.int64)
        np.add.at(counts, (truth, np.asarray(predictions)), 1)
        return counts.tolist()

    matrices = {"device": matrix(device_pred)} | {n: matrix(p) for n, p in host_pred.items()}
    return Confusion(labels=list(labels), matrices=matrices)

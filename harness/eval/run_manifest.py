"""An eval run's manifest (harness/results/manifest.py Manifest), and the checks at the board's HELLO that what
it records holds: the board runs the run's model, every board of the run the same firmware, and a resumed run
the firmware it started with."""

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from harness.boards import Board
from harness.errors import UserError
from harness.eval.inputs import Inputs
from harness.eval.sampling import Selection
from harness.eval.subsets import flag_contradictions
from harness.link.protocol import DeviceInfo
from harness.model.deployable import require_tflm_kernels
from harness.model.dut import DutComputation
from harness.model.tflite_file import TfliteModel
from harness.results.journal import require_same_origin, save_origin
from harness.results.manifest import (
    BoardProvenance,
    DatasetProvenance,
    DeviceProvenance,
    Manifest,
    MeterProvenance,
    ModelProvenance,
)

if TYPE_CHECKING:
    from harness.eval.runner import EvalRequest, OpenRun, Streamed


def check_device_runs_model(
    info: DeviceInfo, model: TfliteModel, computation: DutComputation, board: Board, reflash: str
) -> None:
    """The board runs the model: its firmware loaded it, it is the one (by sha256), with its tensors. `reflash`:
    how to put the model on the board, as the board's driver has it done."""
    if info.runner_status != 0:
        require_tflm_kernels(model)  # names the operators when that is why
        raise UserError(f"the model failed to load on {board.id} (runner status {info.runner_status})")
    if info.model_sha256_prefix and info.model_sha256_prefix != model.sha256[:16]:  # EEMBC DUTs report none
        raise UserError(
            f"{board.id} runs model {info.model_sha256_prefix}…, not {model.sha256[:16]}… "
            f"({model.path.name}): {reflash}"
        )
    if not (info.input.same_layout(computation.input) and info.output.same_layout(computation.output)):
        raise UserError(
            f"{board.id} reports tensors {info.input.describe()} -> {info.output.describe()}, the model has "
            f"{computation.input.describe()} -> {computation.output.describe()}: {reflash}"
        )


def check_same_firmware(infos: dict[str, DeviceInfo]) -> DeviceInfo:
    """Every board of a sharded run runs the same model and firmware, or no sample runs."""
    (first_name, first), *others = infos.items()
    for name, info in others:
        for what, mine, theirs in (
            ("model", first.model_sha256_prefix, info.model_sha256_prefix),
            ("firmware build", first.build_id, info.build_id),
        ):
            if mine != theirs:
                raise UserError(
                    f"board {name} runs {what} {theirs or 'unknown'}, board {first_name} runs {mine or 'unknown'}: "
                    "flash every board of the run with the same firmware and model"
                )
    return first


def check_firmware_origin(folder: Path, recorded: dict, build_id: str) -> None:
    """The first HELLO of a run records the firmware; a resume must meet the same firmware."""
    if "firmware_build_id" in recorded:
        require_same_origin(recorded, {"firmware_build_id": build_id})
    else:
        recorded["firmware_build_id"] = build_id
        save_origin(folder, recorded)


def manifest_of(
    request: "EvalRequest",
    run: "OpenRun",
    streamed: "Streamed",
    inputs: Inputs,
    refs,
    metering,
    selection: Selection,
    order: str,
) -> Manifest:
    settings = request.settings
    return Manifest.new(
        run_id=run.id,
        kind="eval",
        started=run.started,
        finished=datetime.now(UTC).isoformat(),
        settings=settings.stored(),
        model=ModelProvenance.of(request.card, request.model, converted_from=request.converted_from),
        board=BoardProvenance.of(request.board, streamed.board_serial),
        device=DeviceProvenance.of(streamed.info, streamed.firmware, streamed.link),
        dataset=DatasetProvenance.of(
            request.dataset,
            request.subsets,
            inputs.samples,
            members=selection.members,
            limit=settings.limit,
            order=order,
            seed=settings.seed,
            order_seed=settings.order_seed,
            flag_contradictions=flag_contradictions(request.dataset.samples, request.subsets),
        ),
        references={r.name: r.description for r in refs.references} | {"refused": refs.refused},
        meter=MeterProvenance.of(settings.meter, metering.trace) if metering else None,
    )

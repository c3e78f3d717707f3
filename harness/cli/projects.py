"""The one way the commands make a PlatformIO project (`harness firmware generate|build`, `harness flash` for a
real board): what --board, --model, --protocol and --eembc-mode ask for, then the project written in --out."""

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.api.resolve import model_for, tflm_tree
from harness.boards import Board, get_board
from harness.errors import UserError
from harness.streaming.pipeline import streaming_frontend

if TYPE_CHECKING:
    from harness.firmware.eembc_dut import EembcDutBuild
    from harness.firmware.platformio import PioProject
    from harness.model.card import ModelCard
    from harness.model.tflite_file import TfliteModel


@dataclass(frozen=True)
class ProjectRequest:
    """The board, the card and its model, and with `--protocol eembc` the card's DUT (else None: harness's
    protocol), checked before anything is written."""

    board: Board
    card: "ModelCard"
    model: "TfliteModel"
    dut: "EembcDutBuild | None"

    @classmethod
    def named_by(cls, args, board: Board | None = None) -> "ProjectRequest":
        board = board or get_board(args.board)
        card, model = model_for(args, board)
        return cls(board, card, model, dut_build(args, card, model))

    @property
    def computation(self):
        """What the firmware computes with the model (harness/model/dut.py): ad01's DUT its score."""
        from harness.model.dut import dut_computation

        return dut_computation(self.card, self.model)

    def generate(self, args) -> "PioProject":
        """The project in --out, with the TFLM tree of --tflm (or the board's)."""
        from harness.firmware.platformio import generate_project

        return generate_project(
            self.board,
            self.model,
            self.card.name,
            tflm_tree(args, self.board),
            Path(args.out),
            streaming_frontend(self.card),
            dut=self.dut,
        )


def dut_build(args, card, model) -> "EembcDutBuild | None":
    """`--protocol eembc`: the card's MLPerf Tiny / EEMBC DUT firmware in `--eembc-mode` (docs/eembc.md);
    else None, harness's protocol (and `--eembc-mode energy` is refused)."""
    from harness.firmware.eembc_dut import EembcDutBuild
    from harness.model.dut import dut_computation

    if not builds_dut(args):
        refuse_eembc_mode(args)
        return None
    return EembcDutBuild.for_card(card.eembc, dut_computation(card, model).kind, args.eembc_mode)


def builds_dut(args) -> bool:
    """--protocol names the MLPerf Tiny / EEMBC DUT's: the firmware is the card's DUT."""
    from harness.link.registry import session_type

    return session_type(args.protocol).DUT_FIRMWARE


def refuse_eembc_mode(args) -> None:
    """--eembc-mode other than performance without --protocol eembc: one line, before anything starts."""
    from harness.firmware.eembc_dut import EEMBC_MODES

    if args.eembc_mode != EEMBC_MODES[0] and not builds_dut(args):
        raise UserError(f"--eembc-mode {args.eembc_mode} is for DUT firmware: add --protocol eembc")

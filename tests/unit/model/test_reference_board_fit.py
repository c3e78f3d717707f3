"""The MLPerf Tiny reference models against every board (`harness models inspect --board`): docs/boards.md holds the
fit tables as harness computes them today, and every reference model fits every reference board."""

import json
import os

import pytest

from harness.boards import all_boards
from harness.model.inspect import inspect_model
from harness.model.tflite_file import read_tflite
from harness.paths import boards_dir
from tests.conftest import FIXTURE_MODELS
from tests.forked_cli import run_harness_command

REFERENCE = FIXTURE_MODELS / "mlperf_tiny_reference"
MODELS = (  # (benchmark, the reference model's file)
    ("ad01", "ad01_int8.tflite"),
    ("kws01", "kws_ref_model.tflite"),
    ("ic01", "pretrainedResnet_quant.tflite"),
    ("vww01", "vww_96_int8.tflite"),
)
REFERENCE_BOARDS = ("nucleo_l4r5zi", "nucleo_u575zi_q", "disco_f746ng", "nucleo_h7a3zi_q")
DOCS = boards_dir().parent / "docs" / "boards.md"


@pytest.fixture(scope="module")
def inspections():
    if not REFERENCE.is_dir():
        pytest.skip("needs ../shared/fixtures/models/mlperf_tiny_reference")
    boards = list(all_boards().values())
    return {name: inspect_model(read_tflite(REFERENCE / file), boards) for name, file in MODELS}


def fit_tables(inspections) -> str:
    """docs/boards.md's two tables: what each model needs, and each board's fit with its arena margin."""
    needs = ["| model | file | flatbuffer | flash needed (+ 128 KiB code) | arena needed (host estimate) |"]
    needs.append("|---|---|---|---|---|")
    for (name, file), result in zip(MODELS, inspections.values(), strict=True):
        fit = result.fits[0]
        needs.append(
            f"| {name} | `{file}` | {result.flatbuffer_bytes:,} B | {fit.flash_needed:,} B | {fit.arena_needed:,} B |"
        )
    header = "| board | flash | arena limit | " + " | ".join(name for name, _ in MODELS) + " |"
    fits = [header, "|---|---|---|" + "---|" * len(MODELS)]
    boards = [fit.board for fit in next(iter(inspections.values())).fits]
    for index, board in enumerate(boards):
        first = next(iter(inspections.values())).fits[index]
        cells = []
        for result in inspections.values():
            fit = result.fits[index]
            margin = fit.arena_available - fit.arena_needed
            cells.append(f"yes, arena {margin:+,}" if fit.fits else f"**no**, arena {margin:+,}")
        limits = f"| `{board}` | {first.flash_available:,} | {first.arena_available:,} | "
        fits.append(limits + " | ".join(cells) + " |")
    return "\n".join(needs) + "\n\n" + "\n".join(fits) + "\n"


def test_docs_boards_holds_the_fit_tables_as_harness_computes_them(inspections):
    expected = fit_tables(inspections)
    if os.environ.get("HARNESS_PRINT_FIT_TABLES") == "1":
        print(expected)
    assert expected in DOCS.read_text(), f"docs/boards.md's fit tables are out of date; today they are:\n{expected}"


def test_every_reference_model_fits_every_reference_board(inspections):
    for result in inspections.values():
        for fit in result.fits:
            if fit.board in REFERENCE_BOARDS:
                assert fit.fits, (result.model, fit)


def test_models_inspect_board_gives_the_reference_boards_fit():
    if not REFERENCE.is_dir():
        pytest.skip("needs ../shared/fixtures/models/mlperf_tiny_reference")
    done = run_harness_command(
        ["models", "inspect", str(REFERENCE / "vww_96_int8.tflite"), "--board", "disco_f746ng", "--json"],
        env=os.environ.copy(),
    )
    assert done.returncode == 0, done.stderr
    (fit,) = json.loads(done.stdout)["fits"]
    assert fit["board"] == "disco_f746ng" and fit["fits"] is True
    assert fit["flash_available"] == 1048576 and fit["arena_available"] == 196608

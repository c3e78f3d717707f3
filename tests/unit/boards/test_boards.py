"""Board files: validated field by field, user board files and folders, a new family from outside the package."""

import json
import os
from pathlib import Path

import pytest

from harness.boards import (
    BOARD_KINDS,
    DeviceBoard,
    EmulatedBoard,
    HostedBoard,
    VirtualBoard,
    all_boards,
    board_ids,
    get_board,
    load_board_file,
)
from harness.errors import UserError
from harness.paths import boards_dir
from tests.conftest import assert_refused_in_one_line, fixture_model
from tests.forked_cli import run_harness_command

SIM_BOARD = (boards_dir() / "sim.toml").read_text()

RP2040_BOARD = """
id = "pico_rp2040"
name = "Raspberry Pi Pico (RP2040), a board of a family harness does not ship"
kind = "device"
latency_source = "device"
core = "cortex-m0plus"
cpu_hz = 133000000

[memory]
flash_bytes = 2097152
ram_bytes = 270336

[link]
baudrate = 115200
usb_ids = ["2E8A:000A"]

[firmware]
hal = "hal_rp2040"
arena_bytes = 131072
rx_frame_bytes = 2060
tx_frame_bytes = 1036

[platformio]
platform = "raspberrypi@1.9.0"
board = "pico"
framework = "arduino"
upload_protocol = "picotool"
tflm = "lib_deps"
lib_deps = ["tflm_cortexm@1.0.0"]
"""


def _harness(*args, env=None):
    return run_harness_command([*args], env=env or os.environ.copy())


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_every_shipped_board_file_loads_and_the_lists_come_from_the_files():
    boards = all_boards()
    assert {"sim", "qemu_m4", "qemu_m7", "nucleo_h743", "nano33ble", "esp32dev"} <= set(boards)
    assert set(board_ids(platformio=True)) == {b.id for b in boards.values() if b.platformio is not None}
    assert set(board_ids("emulated")) == {"qemu_m4", "qemu_m7"}
    for board in boards.values():
        if board.kind in ("emulated", "device"):
            assert board.hal_dir.is_dir(), board.id


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("baudrate = 115200", "baudrat = 115200"), ["unknown field 'link.baudrat'", "baudrate, switch_baudrate"]),
        (("arena_bytes = 8388608", "arena_byte = 8388608"), ["unknown field 'firmware.arena_byte'", "arena_bytes"]),
        (('kind = "virtual"', 'kind = "virtul"'), ["field 'kind'", "virtual"]),
        (("rx_frame_bytes = 8204", 'rx_frame_bytes = "big"'), ["field 'firmware.rx_frame_bytes'", "integer"]),
        (("[memory]\n", "[memory]\nflash = 1\n"), ["unknown field 'memory.flash'", "flash_bytes, ram_bytes"]),
        (('latency_source = "sim"\n', ""), ["missing field 'latency_source'"]),
        (('id = "sim"', 'id = "sim"\ncolour = "red"'), ["unknown field 'colour'", "latency_source"]),
    ],
)
def test_an_unknown_missing_or_mistyped_field_is_refused_naming_it(tmp_path, change, expected):
    old, new = change
    assert old in SIM_BOARD
    path = _write(tmp_path, "mine.toml", SIM_BOARD.replace(old, new).replace('id = "sim"', 'id = "mine"'))
    with pytest.raises(UserError) as refused:
        load_board_file(path)
    for text in expected:
        assert text in str(refused.value), str(refused.value)
    assert str(path) in str(refused.value)


def test_a_misspelt_board_file_is_refused_in_one_line_by_the_cli(tmp_path):
    path = _write(tmp_path, "typo.toml", SIM_BOARD.replace("baudrate = 115200", "baudrat = 115200"))
    done = _harness("eval", "--board", str(path), "--limit", "1", "--results", str(tmp_path / "results"))
    assert_refused_in_one_line(done, "unknown field 'link.baudrat'", "valid here: baudrate")
    assert not (tmp_path / "results").exists()


def test_consistency_is_checked_beyond_the_types(tmp_path):
    no_qemu = SIM_BOARD.replace('kind = "virtual"', 'kind = "emulated"').replace('id = "sim"', 'id = "q"')
    with pytest.raises(UserError, match=r"needs a \[qemu\] table"):
        load_board_file(_write(tmp_path, "q.toml", no_qemu))
    missing_hal = RP2040_BOARD.replace('hal = "hal_rp2040"', 'hal = "nowhere"')
    with pytest.raises(UserError, match=r"firmware\.hal: no HAL folder"):
        load_board_file(_write(tmp_path, "p.toml", missing_hal))


@pytest.mark.slow
def test_the_user_boards_folder_is_listed_and_its_boards_are_named_by_id(tmp_path):
    folder = tmp_path / "my-boards"
    _write(folder, "bench_sim.toml", SIM_BOARD.replace('id = "sim"', 'id = "bench_sim"'))
    env = {**os.environ, "HARNESS_BOARDS_DIR": str(folder)}
    done = _harness("boards", "list", env=env)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("bench_sim"))
    assert "yours" in line and "bench_sim.toml" in line
    listed = json.loads(_harness("boards", "list", "--json", env=env).stdout)["boards"]
    assert "bench_sim" in {b["id"] for b in listed}
    _write(folder, "clash.toml", SIM_BOARD)  # a second board called "sim"
    assert_refused_in_one_line(_harness("boards", "list", env=env), "id 'sim' is already taken", "an id of its own")


def test_a_board_of_a_new_family_is_one_board_file_and_one_hal_folder(tmp_path):
    """Outside the package: the board file names its HAL folder beside it; the project carries the HAL."""
    fixture_model("wake_vision_zoo/wv_quality_k_2_c_3.tflite")  # the project embeds the model
    outside = tmp_path / "lab"
    hal = outside / "hal_rp2040"
    _write(hal, "board_rp2040.cpp", '#include "board.h"\n// the RP2040 HAL: serial, cycle counter, reset\n')
    board_file = _write(outside, "pico_rp2040.toml", RP2040_BOARD)
    board = get_board(str(board_file))
    assert board.id == "pico_rp2040" and board.hal_dir == hal
    done = _harness(
        "firmware",
        "generate",
        "--board",
        str(board_file),
        "--model",
        "wv_quality_k_2_c_3",
        "--out",
        str(tmp_path / "b"),
    )
    assert done.returncode == 0, done.stderr
    project = Path(json.loads(done.stdout)["project"]) if done.stdout.startswith("{") else None
    project = project or next((tmp_path / "b").rglob("platformio.ini")).parent
    assert (project / "src" / "board_rp2040.cpp").read_text() == (hal / "board_rp2040.cpp").read_text()
    ini = (project / "platformio.ini").read_text()
    assert "platform = raspberrypi@1.9.0" in ini and "tflm_cortexm@1.0.0" in ini


@pytest.mark.slow
def test_eval_runs_on_a_virtual_board_file_from_outside_the_package(tmp_path):
    board_file = _write(tmp_path / "lab", "desk_sim.toml", SIM_BOARD.replace('id = "sim"', 'id = "desk_sim"') + "\n")
    results = tmp_path / "results"
    done = _harness("eval", "--board", str(board_file), "--limit", "3", "--results", str(results), "--json")
    assert done.returncode == 0, done.stderr
    manifests = list(results.rglob("manifest.json"))
    assert len(manifests) == 1
    manifest = json.loads(manifests[0].read_text())
    assert "desk_sim" in json.dumps(manifest["board"])


def test_docs_boards_names_every_field_the_tables_declare():
    import dataclasses
    import typing

    import harness.boards as boards

    text = (boards_dir().parent / "docs" / "boards.md").read_text()
    tables = [boards.Board, boards.Memory, boards.Link, boards.Firmware, boards.PlatformIO, boards.Qemu]
    tables += [boards.Sim, boards.TflmRecipe, boards.BoardDefinition, boards.Eembc]
    for table in tables:
        for field in dataclasses.fields(table):
            subtable = any(dataclasses.is_dataclass(t) for t in (field.type, *typing.get_args(field.type)))
            if field.name != "source_file" and not subtable:
                assert f"`{field.name}`" in text, f"docs/boards.md does not describe {table.__name__}.{field.name}"


def test_the_frame_minimums_are_the_device_cores():
    """boards.py's MIN_RX_FRAME and MIN_TX_FRAME are firmware/core/hp_device.h's, computed from its own defines."""
    import re

    from harness import boards
    from harness.paths import share_dir

    core = share_dir() / "firmware" / "core"
    defines = {}
    for header in ("hp_frame.h", "hp_device.h"):
        for name, body in re.findall(r"^#define (HP_\w+)\s+((?:.*\\\n)*.*)$", (core / header).read_text(), re.M):
            defines[name] = body.replace("\\\n", " ").split("/*")[0].strip()

    def value(name: str) -> int:
        expression = re.sub(r"(\d+)u\b", r"\1", defines[name])
        expression = re.sub(r"\bHP_\w+\b", lambda m: str(value(m.group(0))), expression)
        return eval(expression)  # the header's own arithmetic on numbers only

    assert (value("HP_MIN_RX_FRAME"), value("HP_MIN_TX_FRAME")) == (boards.MIN_RX_FRAME, boards.MIN_TX_FRAME)


@pytest.mark.parametrize(
    ("board_id", "board_type", "builds_firmware", "size_limited", "tflm_source"),
    [
        ("sim", VirtualBoard, False, False, "none"),
        ("qemu_m4", EmulatedBoard, True, True, "tree"),
        ("hal_mbed", HostedBoard, False, True, "none"),
        ("nucleo_h743", DeviceBoard, True, True, "tree"),
        ("nano33ble", DeviceBoard, True, True, "lib_deps"),
    ],
)
def test_a_board_is_the_type_of_its_kind_and_answers_for_it(
    board_id, board_type, builds_firmware, size_limited, tflm_source
):
    board = get_board(board_id)
    assert type(board) is board_type and BOARD_KINDS[board.kind] is board_type
    assert (board.builds_firmware, board.size_limited, board.tflm_source) == (
        builds_firmware,
        size_limited,
        tflm_source,
    )
    assert isinstance(board.with_link(baudrate=9600), board_type)  # a changed board keeps its kind


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("emulated", "an emulated board needs a [qemu] table (machine)"),
        ("device", "a device board needs a [platformio] table (platform, board, framework, upload_protocol)"),
    ],
)
def test_a_kind_missing_its_own_table_is_refused_naming_the_table(tmp_path, kind, expected):
    text = SIM_BOARD.replace('kind = "virtual"', f'kind = "{kind}"').replace('id = "sim"', 'id = "mine"')
    with pytest.raises(UserError) as refused:
        load_board_file(_write(tmp_path, "mine.toml", text))
    assert expected in str(refused.value) and "docs/boards.md" in str(refused.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (SIM_BOARD + '\n[qemu]\nmachine = "mps2-an386"\n', "a virtual board has no [qemu] table (an emulated board's)"),
        (RP2040_BOARD.replace('kind = "device"', 'kind = "hosted"'), "a hosted board has no [platformio] table"),
        (SIM_BOARD.replace('kind = "virtual"', 'kind = "hosted"'), "a hosted board needs sim.hal"),
        (
            SIM_BOARD.replace('kind = "virtual"', 'kind = "rack"'),
            "field 'kind': 'rack' is no board kind; valid: virtual",
        ),
        (
            SIM_BOARD.replace('kind = "virtual"\n', ""),
            "missing field 'kind' (one of virtual, emulated, hosted, device)",
        ),
    ],
)
def test_a_table_of_another_kind_or_no_kind_is_refused_in_one_line(tmp_path, text, expected):
    with pytest.raises(UserError) as refused:
        load_board_file(_write(tmp_path, "mine.toml", text.replace('id = "sim"', 'id = "mine"')))
    assert expected in str(refused.value) and "\n" not in str(refused.value)


def test_board_ids_of_a_kind_come_from_the_board_types():
    assert set(board_ids("device")) >= {"nucleo_h743", "nano33ble", "esp32dev"}
    assert set(board_ids("virtual")) == {"sim"}

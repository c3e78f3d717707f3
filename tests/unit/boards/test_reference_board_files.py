"""The MLPerf Tiny reference boards' files: their limits against the PlatformIO board definitions, their FPU flags
against what stm32duino gives every board, the refusal of FPU flags that disagree, the H7A3's own definition."""

import json
import re
from pathlib import Path

import pytest

from harness.boards import FPUS, load_board_file
from harness.errors import UserError
from harness.firmware.platformio import LINK_SCRIPT, board_json, generate_project, lint
from harness.firmware.tflm_tree import TflmTree
from harness.model.tflite_file import read_tflite
from harness.paths import boards_dir
from tests.conftest import FIXTURE_PLATFORMIO, FIXTURE_TFLM, assert_refused_in_one_line, fixture_model
from tests.forked_cli import run_harness_command

CORE = FIXTURE_PLATFORMIO / "stm32_reference"
STM32DUINO_BUILDER = CORE / "packages" / "framework-arduinoststm32" / "tools" / "platformio" / "platformio-build.py"
REFERENCE_BOARDS = ("nucleo_l4r5zi", "nucleo_u575zi_q", "disco_f746ng", "nucleo_h7a3zi_q")
STM32DUINO_BOARDS = (*REFERENCE_BOARDS, "nucleo_h743")
# What each chip has (the reference manuals; the board files must say the same).
CHIPS = {
    "nucleo_l4r5zi": ("cortex-m4", "fpv4-sp-d16"),
    "nucleo_u575zi_q": ("cortex-m33", "fpv5-sp-d16"),
    "disco_f746ng": ("cortex-m7", "fpv5-sp-d16"),
    "nucleo_h7a3zi_q": ("cortex-m7", "fpv5-d16"),
    "nucleo_h743": ("cortex-m7", "fpv5-d16"),
}
F746 = (boards_dir() / "disco_f746ng.toml").read_text()


def _board(board_id: str):
    return load_board_file(boards_dir() / f"{board_id}.toml")


def _core_board_json(pio_board: str) -> dict:
    path = CORE / "platforms" / "ststm32" / "boards" / f"{pio_board}.json"
    if not path.is_file():
        pytest.skip(f"needs ../shared/fixtures/platformio/stm32_reference ({path.name} absent)")
    return json.loads(path.read_text())


@pytest.mark.parametrize("board_id", REFERENCE_BOARDS)
def test_a_reference_board_file_says_what_its_chip_has(board_id):
    board = _board(board_id)
    assert (board.core, board.fpu) == CHIPS[board_id]
    assert board.firmware.family == "arduino_cortex_m" and board.firmware.cmsis_core == board.core
    assert board.platformio.platform == "platformio/ststm32@19.6.0" and board.platformio.framework == "arduino"
    assert board.tflm.target_arch == board.core
    assert board.link.usb_ids and all(usb_id.startswith("0483:") for usb_id in board.link.usb_ids)  # ST-LINK
    assert board.eembc.timestamp_pin == "D7"
    # The arena leaves the framework, the link's rings, the heap and the stack room in RAM.
    assert board.firmware.arena_bytes + board.firmware.rx_buffer_bytes < board.memory.ram_bytes


@pytest.mark.parametrize("board_id", ("nucleo_l4r5zi", "nucleo_u575zi_q", "disco_f746ng", "nucleo_h743"))
def test_flash_and_ram_are_the_platform_board_definitions_limits(board_id):
    """The linker's limits are the board JSON's (stm32duino passes them as LD_MAX_SIZE and LD_MAX_DATA_SIZE): the
    board file's [memory] must be the same, or the build check and the linker disagree."""
    board = _board(board_id)
    upload = _core_board_json(board.platformio.board)["upload"]
    assert (board.memory.flash_bytes, board.memory.ram_bytes) == (upload["maximum_size"], upload["maximum_ram_size"])
    assert board.cpu_hz <= int(_core_board_json(board.platformio.board)["build"]["f_cpu"].rstrip("L")) or (
        board_id == "nucleo_h743"  # rev V parts run at 480 MHz under stm32duino; the JSON says 400
    )


def _framework_fpu() -> str:
    """The -mfpu stm32duino's builder gives every Cortex-M33, M4 and M7, compiling and linking (machine_flags)."""
    if not STM32DUINO_BUILDER.is_file():
        pytest.skip("needs ../shared/fixtures/platformio/stm32_reference (stm32duino's PlatformIO builder)")
    found = set(re.findall(r'"-mfpu=([\w-]+)"', STM32DUINO_BUILDER.read_text()))
    assert len(found) == 1, found
    return found.pop()


@pytest.mark.parametrize("board_id", STM32DUINO_BOARDS)
def test_compile_and_link_fpu_flags_against_the_core(board_id):
    """PlatformIO's flags as they reach the compiler and the linker: the framework's, less build_unflags (both),
    plus build_flags (the compiler only) or link_flags (the linker only, the project's script). Both must name one
    FPU, the same, and one the board's FPU runs: no -mfpu would leave either GCC's default for the core."""
    board = _board(board_id)
    pio = board.platformio
    framework = [f"-mfpu={_framework_fpu()}"]
    kept = [flag for flag in framework if flag not in pio.build_unflags]
    compiled = [flag for flag in [*kept, *pio.build_flags] if flag.startswith("-mfpu=")]
    linked = [flag for flag in [*kept, *pio.link_flags] if flag.startswith("-mfpu=")]
    assert compiled and linked, (compiled, linked)
    assert compiled[-1] == linked[-1]
    version, double = FPUS[compiled[-1].split("=")[1]]
    has_version, has_double = FPUS[board.fpu]
    assert version <= has_version and double <= has_double


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (  # the H743's swap copied to the F746: the link loses its -mfpu and takes the double-precision libraries
            (
                'build_flags = ["-DSERIAL_RX_BUFFER_SIZE=8192", "-DSERIAL_TX_BUFFER_SIZE=1024"]',
                'build_flags = ["-mfpu=fpv5-sp-d16"]\nbuild_unflags = ["-mfpu=fpv4-sp-d16"]',
            ),
            "platformio.build_unflags removes -mfpu=fpv4-sp-d16 from the link too and link_flags gives none, so the "
            "linker takes GCC's default libraries for the core (double precision on a Cortex-M7); add "
            '"-mfpu=fpv5-sp-d16" to platformio.link_flags',
        ),
        (
            (
                'build_flags = ["-DSERIAL_RX_BUFFER_SIZE=8192", "-DSERIAL_TX_BUFFER_SIZE=1024"]',
                'build_flags = ["-mfpu=fpv5-d16"]\nbuild_unflags = ["-mfpu=fpv4-sp-d16"]\n'
                'link_flags = ["-mfpu=fpv5-d16"]',
            ),
            "platformio.build_flags gives -mfpu=fpv5-d16, which the board's fpu fpv5-sp-d16 cannot run; "
            "give -mfpu=fpv5-sp-d16",
        ),
        (
            (
                'build_flags = ["-DSERIAL_RX_BUFFER_SIZE=8192", "-DSERIAL_TX_BUFFER_SIZE=1024"]',
                'build_flags = ["-mfpu=fpv5-sp-d16"]\nlink_flags = ["-mfpu=fpv4-sp-d16"]',
            ),
            "platformio.build_flags compiles for -mfpu=fpv5-sp-d16 and platformio.link_flags links for "
            "-mfpu=fpv4-sp-d16; give both the same",
        ),
        (
            (
                'build_flags = ["-DSERIAL_RX_BUFFER_SIZE=8192", "-DSERIAL_TX_BUFFER_SIZE=1024"]',
                'build_flags = []\nbuild_unflags = ["-mfpu=fpv4-sp-d16"]\nlink_flags = ["-mfpu=fpv4-sp-d16"]',
            ),
            "platformio.build_unflags removes -mfpu=fpv4-sp-d16 and build_flags gives none, so the compiler takes "
            'GCC\'s default for the core; add "-mfpu=fpv4-sp-d16" to platformio.build_flags',
        ),
        (
            ('fpu = "fpv5-sp-d16"', 'fpu = "fpv5-sp-d32"'),
            "field 'fpu'",
        ),
        (
            (
                'build_flags = ["-DSERIAL_RX_BUFFER_SIZE=8192", "-DSERIAL_TX_BUFFER_SIZE=1024"]',
                'build_flags = ["-mfpu=neon"]',
            ),
            "platformio.build_flags gives -mfpu=neon, an FPU harness does not know (valid: fpv4-sp-d16, fpv5-sp-d16, "
            "fpv5-d16)",
        ),
        (
            ('fpu = "fpv5-sp-d16"', 'fpu = "fpv5-sp-d16"\n[eembc]\ntimestamp = "D7"'),
            "unknown field 'eembc.timestamp'",
        ),
    ],
)
def test_fpu_flags_that_disagree_with_the_board_are_refused_in_one_line(tmp_path, change, expected):
    old, new = change
    assert old in F746
    text = F746.replace(old, new).replace('id = "disco_f746ng"', 'id = "my_f746"')
    if "[eembc]\ntimestamp" in new:  # the file's own [eembc] table would be a second one
        text = text.replace("[eembc]\n# D7 of the Arduino header (PI3)", "# D7 of the Arduino header (PI3)").replace(
            'timestamp_pin = "D7"\n', "", 1
        )
    path = tmp_path / "my_f746.toml"
    path.write_text(text)
    with pytest.raises(UserError) as refused:
        load_board_file(path)
    assert expected in str(refused.value), str(refused.value)
    done = run_harness_command(
        ["models", "inspect", str(fixture_model("wake_vision_zoo/wv_quality_k_2_c_3.tflite")), "--board", str(path)]
    )
    assert_refused_in_one_line(done, expected)


def test_a_board_file_without_its_own_fpu_flags_and_the_fpu_of_the_bare_metal_boards():
    """The framework's flags are not the board file's to check (the ELF is: test_fpu_check.py); flags the file does
    give are. The QEMU boards' CPU flags name their FPU too."""
    for board_id, fpu in (("qemu_m4", "fpv4-sp-d16"), ("qemu_m7", "fpv5-d16")):
        board = _board(board_id)
        assert board.fpu == fpu and f"-mfpu={fpu}" in board.firmware.cpu_flags.split()


def test_the_eembc_pin_defaults_to_the_reference_firmwares_d7():
    sim = load_board_file(boards_dir() / "sim.toml")
    assert sim.eembc.timestamp_pin == "D7"


@pytest.fixture
def tiny_tree():
    if not (FIXTURE_TFLM / "cmsis_nn").is_dir():
        pytest.skip("needs ../shared/fixtures/tflm/cmsis_nn")
    return TflmTree(FIXTURE_TFLM / "cmsis_nn")


def test_the_h7a3_project_carries_its_board_definition_and_its_link_flags(tmp_path, tiny_tree, small_model):
    board = _board("nucleo_h7a3zi_q")
    project = generate_project(board, read_tflite(small_model), "k_2_c_3", tiny_tree, tmp_path / "build")
    definition = json.loads((project.path / "boards" / "nucleo_h7a3zi_q.json").read_text())
    assert definition["build"]["variant"] == "STM32H7xx/H7A3Z(G-I)TxQ_H7B3ZITxQ"
    assert (
        definition["build"]["product_line"] == "STM32H7A3xxQ"
        and "-DSTM32H7A3xxQ" in definition["build"]["extra_flags"].split()
    )
    assert definition["build"]["f_cpu"] == "280000000L" and "arduino" in definition["frameworks"]
    assert definition["upload"]["maximum_size"] == board.memory.flash_bytes
    assert definition["upload"]["maximum_ram_size"] == board.memory.ram_bytes
    ini = (project.path / "platformio.ini").read_text()
    assert f"extra_scripts = post:{LINK_SCRIPT}" in ini and "board = nucleo_h7a3zi_q" in ini
    script = (project.path / LINK_SCRIPT).read_text()
    assert 'env.Append(LINKFLAGS=["-mfpu=fpv5-d16"])' in script
    compile(script, LINK_SCRIPT, "exec")  # SCons runs it as Python
    assert lint(project)["errors"] == []
    # A board the platform has gets neither: no definition, no link script.
    plain = generate_project(_board("nucleo_l4r5zi"), read_tflite(small_model), "k", tiny_tree, tmp_path / "b2")
    assert not (plain.path / "boards").exists() and not (plain.path / LINK_SCRIPT).exists()
    assert "extra_scripts" not in (plain.path / "platformio.ini").read_text()


def test_a_board_definition_is_laid_out_as_the_platforms_own(tmp_path):
    """The F746's definition written as a board file's [platformio.board_definition] gives back the platform's
    own disco_f746ng.json for every field harness writes."""
    platform = _core_board_json("disco_f746ng")
    build = platform["build"]
    table = f"""
[platformio.board_definition]
name = "{platform["name"]}"
mcu = "{build["mcu"]}"
cpu = "{build["cpu"]}"
f_cpu = {int(build["f_cpu"].rstrip("L"))}
extra_flags = "{build["extra_flags"]}"
product_line = "{build["product_line"]}"
variant = "{build["variant"]}"
frameworks = {json.dumps(platform["frameworks"])}
upload_protocols = {json.dumps(platform["upload"]["protocols"])}
openocd_target = "{platform["debug"]["openocd_target"]}"
jlink_device = "{platform["debug"]["jlink_device"]}"
svd_path = "{platform["debug"]["svd_path"]}"
url = "{platform["url"]}"
vendor = "{platform["vendor"]}"
"""
    text = F746.replace('id = "disco_f746ng"', 'id = "my_f746"').replace("\n[tflm]", table + "\n[tflm]")
    path = tmp_path / "my_f746.toml"
    path.write_text(text)
    written = json.loads(board_json(load_board_file(path)))

    def subset(mine, theirs, where=""):
        for key, value in mine.items():
            assert key in theirs, f"{where}{key}"
            if isinstance(value, dict):
                subset(value, theirs[key], f"{where}{key}.")
            else:
                assert value == theirs[key], f"{where}{key}: {value!r} != {theirs[key]!r}"

    subset(written, platform)
    assert Path(path).is_file()


def test_boards_json_writes_the_eembc_table_as_its_fields():
    done = run_harness_command(["boards", "--json"])
    assert done.returncode == 0, done.stderr
    boards = {board["id"]: board for board in json.loads(done.stdout)["boards"]}
    assert boards["nucleo_l4r5zi"]["eembc"] == {"timestamp_pin": "D7"}
    assert boards["nucleo_h7a3zi_q"]["platformio"]["board_definition"]["variant"] == "STM32H7xx/H7A3Z(G-I)TxQ_H7B3ZITxQ"
    assert boards["nucleo_h7a3zi_q"]["platformio"]["link_flags"] == ["-mfpu=fpv5-d16"]

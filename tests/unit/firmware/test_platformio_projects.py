"""PlatformIO projects for the real boards: lint, resolver, flash through a fake `pio`, discovery."""

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest
from serial.tools import list_ports_common

from harness.boards import all_boards, board_ids, get_board
from harness.cli import exits
from harness.device.sim_board import SimBoard, TflmRunner
from harness.firmware.platformio import generate_project, lint
from harness.firmware.project_archive import archive_project
from harness.firmware.tflm_tree import TflmTree, resolver_method
from harness.model.tflite_file import model_operators, read_tflite, schema
from tests.conftest import assert_refused_in_one_line, error_lines, fixture_model
from tests.forked_cli import run_harness_command

pytest.importorskip("platformio", reason="needs the platformio package (test extras)")
BUILTIN_OPERATORS = [name for name in vars(schema.BuiltinOperator) if not name.startswith("_")]
# The signal library's operators (audio frontends), custom operators TFLM's resolver also takes.
SIGNAL_OPERATORS = ["SignalWindow", "SignalRfft", "SignalEnergy", "SignalFftAutoScale", "SignalFilterBank",
                    "SignalFilterBankSquareRoot", "SignalFilterBankSpectralSubtraction", "SignalFilterBankLog",
                    "SignalPCAN"]  # fmt: skip
MODELS = (
    "wake_vision_zoo/wv_quality_k_2_c_3.tflite",
    "tflm/person_detect.tflite",
    "mlperf_tiny/visual_wake_words.tflite",
)


@pytest.fixture(scope="module")
def tflm_tree(tmp_path_factory) -> TflmTree:
    """A placeholder tree for generation (nothing is compiled here): the file TflmTree checks for."""
    root = tmp_path_factory.mktemp("tflm-tree")
    micro = root / "tensorflow" / "lite" / "micro"
    micro.mkdir(parents=True)
    (micro / "micro_interpreter.h").write_text("")
    # The resolver's methods, as TFLM declares them, so the generator can pick each operator's kernels.
    methods = [
        f"TfLiteStatus {resolver_method(op)}(const R& r = Register_{op}()) {{}}"
        for op in [*BUILTIN_OPERATORS, *SIGNAL_OPERATORS]
    ]
    (micro / "micro_mutable_op_resolver.h").write_text("\n".join(methods) + "\n")
    return TflmTree(root)


@pytest.mark.parametrize("board_id", board_ids(platformio=True))
@pytest.mark.parametrize("model_path", MODELS)
def test_generated_project_lints_clean_and_resolves_exactly_the_models_operators(
    board_id, model_path, tmp_path, tflm_tree
):
    model = read_tflite(fixture_model(model_path))
    board = get_board(board_id)
    project = generate_project(board, model, "test", tflm_tree if board.tflm_source == "tree" else None, tmp_path)
    assert lint(project) == {"errors": [], "warnings": []}
    ini = (project.path / "platformio.ini").read_text()
    assert f"platform = {board.platformio.platform}" in ini and "@" in board.platformio.platform
    if board.platformio.framework == "espidf":  # IDF components take no project flags: the app's CMake has them
        assert "-DTF_LITE_STATIC_MEMORY" in (project.path / "src" / "CMakeLists.txt").read_text()
        assert "CONFIG_COMPILER_OPTIMIZATION_PERF=y" in (project.path / "sdkconfig.defaults").read_text()
    else:
        assert "-DTF_LITE_STATIC_MEMORY" in ini and "build_src_flags =\n    -std=gnu++17" in ini
    resolver = (project.path / "src" / "model_ops.inc").read_text()
    methods = re.findall(r"\(r\)\.(\w+)\(\)", resolver)
    assert sorted(methods) == sorted({resolver_method(op) for op in model_operators(model.data)})
    assert f"#define HARNESS_OP_COUNT {len(methods)}" in resolver
    config = (project.path / "src" / "harness_build_config.h").read_text()
    assert f'"{project.build_id}"' in config and model.sha256[:2] in config
    arena = int(re.search(r"HP_ARENA_BYTES (\d+)u", config).group(1))
    assert 0 < arena <= board.firmware.arena_bytes
    assert (project.path / "src" / "hp_device.c").read_bytes() == (Path("firmware/core/hp_device.c")).read_bytes()
    assert not (project.path / "src" / "no_model_runner.c").exists()


def test_nucleo_without_tflm_sources_says_what_to_pass(tmp_path, small_model):
    done = run_harness_command(
        ["firmware", "generate", "--board", "nucleo_h743", "--model", "wv_quality_k_2_c_3", "--out", str(tmp_path)],
        env={k: v for k, v in os.environ.items() if k != "HARNESS_TFLM_TREE"},
    )
    # Without --tflm harness fetches the board's tree: here from conftest's closed loopback mirror (offline).
    assert_refused_in_one_line(done, "could not fetch", "--tflm PATH")


FAKE_PIO = """#!{python}
import os, sys, time
with open(os.environ["FAKE_PIO_LOG"], "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
mode = os.environ.get("FAKE_PIO_MODE", "ok")
if mode == "hang":
    time.sleep(600)
if mode == "fail":
    print("Error: Please specify `upload_port` for environment or use global `--upload-port` option.")
    sys.exit(1)
print("========================= [SUCCESS] Took 1.00 seconds =========================")
"""


@pytest.fixture
def fake_pio(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "pio"
    script.write_text(FAKE_PIO.format(python=sys.executable))
    script.chmod(0o755)
    log = tmp_path / "pio.log"
    env = os.environ | {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_PIO_LOG": str(log)}
    return env, log


class _BoardOnPty:
    """A board that runs `model` and reports `build_id`, served by the device core on a pseudo-terminal; with
    `dut` (SimBoard's eembc_model, eembc_energy) the EEMBC C DUT harness builds for `--protocol eembc`."""

    def __init__(self, model_path: Path, build_id: str = "", board_id: str = "nucleo_h743", **dut):
        self.runner = TflmRunner(model_path.read_bytes(), 1 << 20)
        self.board = SimBoard(
            self.runner, board_id=board_id, build_id=build_id, rx_frame=4108, tx_frame=4108, rx_buffer=4096, **dut
        )
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self):
        while not self.stop.is_set():
            self.board.poll(20)

    def __enter__(self):
        self.thread.start()
        return self.board.pty_path

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.board.close()


def _flash(env, tmp_path, tflm_tree, port=None, *extra):
    command = [sys.executable, "-m", "harness", "flash", "--board", "nucleo_h743", "--model", "wv_quality_k_2_c_3"]
    command += ["--tflm", str(tflm_tree.root), "--out", str(tmp_path / "build"), *extra]
    command += ["--port", port] if port else []
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def test_flash_runs_pio_upload_then_checks_model_and_build(fake_pio, tmp_path, tflm_tree, small_model):
    env, log = fake_pio
    project = generate_project(get_board("nucleo_h743"), read_tflite(small_model), "x", tflm_tree, tmp_path / "build")
    with _BoardOnPty(small_model, project.build_id) as port:
        done = _flash(env, tmp_path, tflm_tree, port)
    assert done.returncode == 0, done.stderr
    assert log.read_text().split() == [
        "run",
        "-d",
        str(project.path),
        "-e",
        "nucleo_h743",
        "-t",
        "upload",
        "--upload-port",
        port,
    ]
    assert f"flashed {project.build_id}" in done.stdout
    record = json.loads((project.path / "harness-build.json").read_text())
    assert record["build_id"] == project.build_id and record["kernels"] == "reference"
    assert "-DTF_LITE_STATIC_MEMORY" in record["flags"]


def test_flash_refuses_a_board_that_answers_with_another_model(fake_pio, tmp_path, tflm_tree, small_model):
    env, _ = fake_pio
    other = fixture_model("tflm/person_detect.tflite")
    with _BoardOnPty(other, "nucleo_h743-000000000000") as port:
        done = _flash(env, tmp_path, tflm_tree, port)
    assert done.returncode == 2 and "answers with model" in done.stderr and len(error_lines(done)) == 1


def _vww01() -> Path:
    return fixture_model("mlperf_tiny_reference/vww_96_int8.tflite")


def _flash_dut(env, tmp_path, tflm_tree, port, *extra):
    """`harness flash --protocol eembc` of the vww01 card to nucleo_h743 at `port`, --json."""
    command = [sys.executable, "-m", "harness", "flash", "--board", "nucleo_h743", "--model", "mlperf_tiny_vww01"]
    command += ["--protocol", "eembc", "--tflm", str(tflm_tree.root), "--out", str(tmp_path / "build"), "--json"]
    return subprocess.run([*command, "--port", port, *extra], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("mode", ["performance", "energy"])
def test_flash_eembc_uploads_the_cards_dut_then_checks_its_name_and_profile(fake_pio, tmp_path, tflm_tree, mode):
    """Behind the port, the EEMBC C DUT harness builds (the virtual board's, as an energy-mode build for energy):
    the upload of the DUT project, then `name` and `profile` answered as the card's [eembc] model says."""
    env, log = fake_pio
    with _BoardOnPty(_vww01(), eembc_model="vww01", eembc_energy=mode == "energy") as port:
        done = _flash_dut(env, tmp_path, tflm_tree, port, "--eembc-mode", mode)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    project = Path(found["project"])
    upload = ["run", "-d", str(project), "-e", "nucleo_h743", "-t", "upload", "--upload-port", port]
    assert log.read_text().split() == upload
    config = (project / "src" / "harness_build_config.h").read_text()
    assert '#define HP_EEMBC_MODEL "vww01"' in config and (project / "src" / "eembc_main.c").is_file()
    assert f"#define HP_EEMBC_ENERGY_MODE {int(mode == 'energy')}" in config
    assert f"monitor_speed = {found['baud']}\n" in (project / "platformio.ini").read_text()  # the DUT's rate
    assert found["protocol"] == "eembc" and found["eembc_mode"] == mode and found["model"] == "mlperf_tiny_vww01"
    assert found["baud"] == (9600 if mode == "energy" else 115200)
    assert found["answers"]["name"] == "nucleo_h743" and found["answers"]["profile"] == "vww01"
    assert found["answers"]["timestamps"] == (
        "none on the serial line (energy mode)" if mode == "energy" else "m-lap-us- lines"
    )


@pytest.mark.parametrize(
    ("board_id", "dut", "answer"),
    [
        (
            "nucleo_h743",
            {"eembc_model": "ic01"},
            "answers name nucleo_h743 and profile ic01, expected nucleo_h743 and vww01",
        ),
        ("nucleo_f746", {"eembc_model": "vww01"}, "answers name nucleo_f746 and profile vww01, expected nucleo_h743"),
    ],
)
def test_flash_eembc_refuses_a_dut_that_answers_another_model_or_board(
    fake_pio, tmp_path, tflm_tree, board_id, dut, answer
):
    env, log = fake_pio
    with _BoardOnPty(_vww01(), board_id=board_id, **dut) as port:
        done = _flash_dut(env, tmp_path, tflm_tree, port)
    assert_refused_in_one_line(done, answer, "the upload did not take")
    assert "-t upload" in log.read_text()  # it was uploaded, then refused for what it answered


def test_flash_eembc_energy_refuses_a_dut_that_prints_its_timestamps(fake_pio, tmp_path, tflm_tree):
    env, _ = fake_pio
    with _BoardOnPty(_vww01(), eembc_model="vww01") as port:  # a performance-mode build
        done = _flash_dut(env, tmp_path, tflm_tree, port, "--eembc-mode", "energy")
    assert_refused_in_one_line(done, "prints its timestamps as m-lap-us- lines", "--eembc-mode energy")


def test_flash_refuses_eembc_mode_without_the_eembc_protocol_before_anything(
    fake_pio, tmp_path, tflm_tree, small_model
):
    env, log = fake_pio
    done = _flash(env, tmp_path, tflm_tree, "/dev/null", "--eembc-mode", "energy")
    assert_refused_in_one_line(done, "--eembc-mode energy is for DUT firmware: add --protocol eembc")
    assert not log.exists() and not (tmp_path / "build").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "code", "message"),
    [
        ("fail", exits.BUILD, "PlatformIO build/upload failed (Error: Please specify"),
        ("hang", exits.BUILD, "did not finish within 2 s"),
    ],
)
def test_flash_reports_pio_failures_in_one_line(fake_pio, tmp_path, tflm_tree, small_model, mode, code, message):
    env, _ = fake_pio
    done = _flash(env | {"FAKE_PIO_MODE": mode, "HARNESS_PIO_TIMEOUT": "2"}, tmp_path, tflm_tree, "/dev/null")
    assert done.returncode == code and message in done.stderr and len(error_lines(done)) == 1


def test_flash_without_platformio_installed(tmp_path, tflm_tree, small_model):
    done = _flash(os.environ | {"HARNESS_PIO": "/nonexistent/pio"}, tmp_path, tflm_tree)
    assert done.returncode == 2 and "PlatformIO not found at HARNESS_PIO=/nonexistent/pio" in done.stderr


def _port(device, vid, pid, serial):
    info = list_ports_common.ListPortInfo(device, skip_link_detection=True)
    info.vid, info.pid, info.serial_number = vid, pid, serial
    return info


def test_attached_boards_are_found_by_usb_id_and_serial_number(monkeypatch, capsys):
    from harness import cli
    from harness.device import discovery
    from harness.errors import UserError

    ports = [
        _port("/dev/ttyACM0", 0x0483, 0x374E, "0671FF3833554B3043164817"),
        _port("/dev/ttyACM1", 0x2341, 0x805A, "A1B2C3"),
        _port("/dev/ttyUSB0", 0x10C4, 0xEA60, "0001"),
        _port("/dev/ttyS0", None, None, None),
    ]
    monkeypatch.setattr(discovery.list_ports, "comports", lambda: ports)
    assert cli.main(["boards", "list", "--json"]) == 0
    attached = json.loads(capsys.readouterr().out)["attached"]
    # Every ST board with an STLINK-V3 has its USB id: the port is listed under each of them (docs/boards.md).
    stlink_v3 = [board.id for board in all_boards().values() if "0483:374E" in board.link.usb_ids]
    assert "nucleo_h743" in stlink_v3
    assert sorted((a["board"], a["port"], a["serial_number"]) for a in attached) == sorted(
        [
            ("esp32dev", "/dev/ttyUSB0", "0001"),
            ("nano33ble", "/dev/ttyACM1", "A1B2C3"),
            *((board, "/dev/ttyACM0", "0671FF3833554B3043164817") for board in stlink_v3),
        ]
    )
    assert discovery.find_port(get_board("nucleo_h743")) == "/dev/ttyACM0"
    ports.append(_port("/dev/ttyACM2", 0x0483, 0x374B, "066DFF"))
    with pytest.raises(UserError, match="several nucleo_h743"):
        discovery.find_port(get_board("nucleo_h743"))
    assert discovery.find_port(get_board("nucleo_h743"), "066DFF") == "/dev/ttyACM2"


def test_model_array_is_the_model_byte_for_byte(tmp_path, small_model, tflm_tree):
    project = generate_project(get_board("nucleo_h743"), read_tflite(small_model), "x", tflm_tree, tmp_path)
    source = (project.path / "src" / "model_data.cc").read_text()
    values = bytes(int(v, 16) for v in re.findall(r"0x([0-9a-f]{2})", source))
    assert hashlib.sha256(values).hexdigest() == hashlib.sha256(small_model.read_bytes()).hexdigest()
    assert "alignas(16)" in source and 'extern "C"' in source


def test_a_project_compiles_the_layer_trace_in_by_default_and_out_when_asked(tmp_path, small_model, tflm_tree):
    from harness.firmware.assemble import LayerTraceBuild

    board, model = get_board("nucleo_h743"), read_tflite(small_model)
    traced = generate_project(board, model, "x", tflm_tree, tmp_path / "on")
    untraced = generate_project(board, model, "x", tflm_tree, tmp_path / "off", trace=LayerTraceBuild(enabled=False))
    for project, value in ((traced, 1), (untraced, 0)):
        assert f"#define HP_LAYER_TRACE {value}\n" in (project.path / "src" / "harness_build_config.h").read_text()
    assert traced.build_id != untraced.build_id  # a board's HELLO tells which firmware it runs


def test_a_keyword_card_with_streaming_embeds_its_audio_frontend(tmp_path, tflm_tree):
    """`harness firmware generate` for tflm_micro_speech: the frontend model and its signal-kernel resolver
    go into the project beside the keyword model, and the firmware is built to stream."""
    fixture_model("tflm/micro_speech_quantized.tflite")
    fixture_model("tflm/audio_preprocessor_int8.tflite")
    command = ["firmware", "generate", "--board", "nucleo_h743", "--model", "tflm_micro_speech"]
    done = run_harness_command([*command, "--tflm", str(tflm_tree.root), "--out", str(tmp_path), "--json"])
    assert done.returncode == 0, done.stderr
    src = Path(json.loads(done.stdout)["project"]) / "src"
    assert "#define HP_HAS_FRONTEND 1" in (src / "harness_build_config.h").read_text()
    assert "g_harness_frontend[" in (src / "frontend_data.cc").read_text()
    resolver = (src / "frontend_ops.inc").read_text()
    assert "#define HARNESS_FRONTEND_OP_COUNT 18" in resolver
    for method in ("AddWindow", "AddRfft", "AddFilterBankSpectralSubtraction", "AddPCAN", "AddFilterBankLog"):
        assert f"(r).{method}();" in resolver


def test_a_generated_project_is_self_contained_and_its_archive_lists_every_file(tmp_path, private_cache):
    """No path in any text file of the project leads outside it (not the tree, not the cache, not the folder it was
    generated in); TFLM is copied as this model needs it; --archive packs exactly those files with their sha256s."""
    from tests.conftest import FIXTURE_TFLM

    tree = FIXTURE_TFLM / "cmsis_nn"
    if not tree.is_dir():
        pytest.skip("needs ../shared/fixtures/tflm/cmsis_nn")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "harness", "firmware", "generate", "--board", "nucleo_h743"]
    command += ["--model", "wv_quality_k_2_c_3", "--tflm", str(tree), "--out", str(out), "--archive", "--json"]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    project, archive = Path(found["project"]), Path(found["archive"])
    assert archive == project.with_name(project.name + ".zip")

    files = {p.relative_to(project).as_posix(): p.read_bytes() for p in project.rglob("*") if p.is_file()}
    forbidden = [str(tmp_path), str(tree), str(tree.resolve()), str(private_cache), str(Path.home()), ".cache/harness"]
    absolute = re.compile(r"(?<![\w.$}])/(?:root|home|tmp|work|usr|opt|var|mnt)/")
    texts = 0
    for name, data in files.items():
        try:
            text = data.decode()
        except UnicodeDecodeError:
            continue
        texts += 1
        assert not [f for f in forbidden if f in text], f"{name} names a path outside the project"
        assert not absolute.search(text), f"{name}: {absolute.search(text).group()}"
    assert texts == len(files)  # every file of a project is text: none escaped the check
    ini = files["platformio.ini"].decode()
    assert "harness firmware generate --board nucleo_h743" in ini and "lib_extra_dirs" not in ini
    assert "-I${PROJECT_DIR}/lib/tflm/third_party/flatbuffers/include" in ini
    assert "pio run" in files["README.md"].decode() and "PLATFORMIO_CORE_DIR" in files["README.md"].decode()

    # TFLM: exactly the sources the generation selects for this model, every header, no CMSIS Core of the tree.
    tflm = TflmTree(tree)
    model = read_tflite(fixture_model("wake_vision_zoo/wv_quality_k_2_c_3.tflite"))
    wanted = {f"lib/tflm/{p.relative_to(tflm.root).as_posix()}" for p in tflm.sources_for(model_operators(model.data))}
    copied = {name for name in files if name.startswith("lib/tflm/") and name.endswith((".c", ".cc"))}
    assert copied == wanted and len(wanted) < len(tflm.sources)
    headers = {f"lib/tflm/{p.relative_to(tree).as_posix()}" for p in tree.rglob("*.h") if "third_party/cmsis/" not in
               p.relative_to(tree).as_posix()}  # fmt: skip
    assert headers <= files.keys() and not any(name.startswith("lib/tflm/third_party/cmsis/") for name in files)
    for name in copied | headers:
        assert files[name] == (tree / name.removeprefix("lib/tflm/")).read_bytes()

    # The archive: every file under one folder, sorted, fixed times, and a manifest whose sha256s match them.
    with zipfile.ZipFile(archive) as packed:
        names = packed.namelist()
        assert names == sorted(names) and all(n.startswith(f"{project.name}/") for n in names)
        assert {info.date_time for info in packed.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        contents = {n.removeprefix(f"{project.name}/"): packed.read(n) for n in names}
    manifest = json.loads(contents.pop("manifest.json"))
    assert contents == files
    assert manifest["files"] == {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    first = archive.read_bytes()
    archive.unlink()
    assert archive_project(project) == archive and archive.read_bytes() == first  # deterministic

"""TFLM obtained by harness (docs/tflm.md), against a stand-in mirror on loopback: a tflite-micro-shaped archive
whose create_tflm_tree.py keeps the real one's command-line contract (run in the checkout, OUTPUT_DIR and
--makefile_options; it refuses to run unless every download is in place, patched), stand-in third-party archives,
and the real pins' layout with the stand-ins' sha256 (HARNESS_TFLM_PINS). Nothing here reaches the internet."""

import argparse
import functools
import http.server
import json
import os
import sys
import threading
import tomllib
import zipfile
from pathlib import Path

import pytest

from harness.boards import all_boards, get_board
from harness.cli import exits
from harness.errors import UserError
from harness.firmware import tflm_pins
from harness.firmware.tflm_archives import files_sha256
from harness.firmware.tflm_pins import PINS_FILE, Recipe, board_recipe, load_pins
from harness.firmware.tflm_tree import TflmTree
from tests.conftest import assert_refused_in_one_line, closed_port, fixture_model
from tests.forked_cli import run_harness_command

COMMIT = "90b983c2b3f1480642e040bbd2ddb37b998f3424"
CMSIS_NN_OPTIONS = (
    "TARGET=cortex_m_generic TARGET_ARCH=cortex-m7 OPTIMIZED_KERNEL_DIR=cmsis_nn TARGET_TOOLCHAIN_ROOT=/usr/bin/"
)

STANDIN_GENERATOR = '''\
"""Stand-in for tflite-micro's create_tflm_tree.py: its command line, run from the checkout's root."""
import argparse, os, sys, time
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("output_dir")
parser.add_argument("--makefile_options", default="")
args = parser.parse_args()
options = args.makefile_options.split()
mode = os.environ.get("STANDIN_GENERATOR", "ok")
if mode == "hang":
    time.sleep(600)
if mode == "fail":
    sys.exit("make: *** [third_party_downloads] stand-in failure")
downloads = Path("tensorflow/lite/micro/tools/make/downloads")
needed = ["flatbuffers", "gemmlowp", "ruy", "kissfft", "pigweed"]
if "TARGET=cortex_m_generic" in options or "OPTIMIZED_KERNEL_DIR=cmsis_nn" in options:
    needed += ["cmsis", "cmsis/Cortex_DFP"]
if "OPTIMIZED_KERNEL_DIR=cmsis_nn" in options:
    needed.append("cmsis_nn")
missing = [name for name in needed if not (downloads / name).is_dir()]
if missing:
    sys.exit(f"the Makefile would download {missing}")
if "TARGET=cortex_m_generic" in options and "TARGET_TOOLCHAIN_ROOT=/usr/bin/" not in options:
    sys.exit("the Makefile would download Arm's toolchain")
flatbuffers = (downloads / "flatbuffers/include/flatbuffers/base.h").read_text()
kissfft = (downloads / "kissfft/kiss_fft.h").read_text()
if "patched by TFLM" not in flatbuffers or "patched by TFLM" not in kissfft:
    sys.exit("a download lacks its TFLM patch")
if (downloads / "flatbuffers/BUILD").exists():
    sys.exit("BUILD files are deleted by the download scripts")
if mode == "download":
    (downloads / "surprise").mkdir()
out = Path(args.output_dir)
files = {
    "tensorflow/lite/micro/micro_interpreter.h": "// stand-in\\n",
    "tensorflow/lite/micro/micro_interpreter.cc": "// stand-in\\n",
    # The resolver's methods for the small model's operators: a project lists the sources they need.
    "tensorflow/lite/micro/micro_mutable_op_resolver.h": "".join(
        f"TfLiteStatus {method}() {{}}\\n"
        for method in ("AddConv2D", "AddQuantize", "AddFullyConnected", "AddSoftmax", "AddMaxPool2D", "AddMean")
    ),
    "tensorflow/lite/micro/makefile_options.txt": args.makefile_options,
    "third_party/flatbuffers/include/flatbuffers/base.h": flatbuffers,
    "third_party/kissfft/kiss_fft.h": kissfft,
}
if "OPTIMIZED_KERNEL_DIR=cmsis_nn" in options:
    header = "cmsis_nn/Include/arm_nnfunctions.h"
    files["third_party/" + header] = (downloads / header).read_text()
    files["tensorflow/lite/micro/kernels/cmsis_nn/conv.cc"] = "// stand-in\\n"
for name, text in files.items():
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(text)
'''

PATCH = """--- a/{path}
+++ b/{path}
@@ -1 +1,2 @@
 // {name} stand-in
+// patched by TFLM
"""

# Each stand-in: its files inside the archive's top folder.
STANDINS = {
    "flatbuffers": ("flatbuffers-25.9.23", {"include/flatbuffers/base.h": "// flatbuffers stand-in\n", "BUILD": ""}),
    "gemmlowp": ("gemmlowp-719139ce", {"public/gemmlowp.h": "// gemmlowp stand-in\n"}),
    "ruy": ("ruy-d3712831", {"ruy/profiler/instrumentation.h": "// ruy stand-in\n"}),
    "kissfft": ("kissfft-130", {"kiss_fft.h": "// kissfft stand-in\n"}),
    "CMSIS_6": ("CMSIS_6-5782d6f8", {"CMSIS/Core/Include/cmsis_compiler.h": "// CMSIS_6 stand-in\n"}),
    "Cortex_DFP": ("Cortex_DFP-c2c70a97", {"Device/ARMCM7/Include/ARMCM7.h": "// Cortex_DFP stand-in\n"}),
    "CMSIS-NN": ("CMSIS-NN-4ab83cc3", {"Include/arm_nnfunctions.h": "// CMSIS-NN stand-in\n"}),
}


def _zip(path: Path, top: str, files: dict[str, str | bytes], compression=zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in files.items():
            archive.writestr(f"{top}/{name}", data)
    return path


def _toml(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def write_pins(path: Path, pins: dict) -> Path:
    lines = ["[tflite_micro]"] + [f"{k} = {_toml(v)}" for k, v in pins["tflite_micro"].items()]
    for entry in pins["third_party"]:
        lines += ["", "[[third_party]]"] + [f"{k} = {_toml(v)}" for k, v in entry.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def build_standins(folder: Path) -> dict:
    """Stand-in archives under the real pins' file names, and the real pins with their sha256."""
    folder.mkdir(parents=True, exist_ok=True)
    pins = tomllib.loads(PINS_FILE.read_text())
    tflm = pins["tflite_micro"]
    checkout = {
        "tensorflow/lite/micro/micro_interpreter.h": "// stand-in\n",
        "tensorflow/lite/micro/tools/make/Makefile": "# stand-in\n",
        "tensorflow/lite/micro/tools/project_generation/create_tflm_tree.py": STANDIN_GENERATOR,
    }
    for entry in pins["third_party"]:
        top, files = STANDINS[entry["name"]]
        if entry.get("patch"):
            first = next(name for name in files if name != "BUILD")
            checkout[entry["patch"]] = PATCH.format(path=first, name=entry["name"])
        entry["sha256"] = files_sha256(_zip(folder / entry["file"], top, files))
        entry["url"] = f"https://upstream.invalid/{entry['file']}"
    tflm["sha256"] = files_sha256(_zip(folder / tflm["file"], f"tflite-micro-{COMMIT}", checkout))
    tflm["url"] = f"https://upstream.invalid/{tflm['file']}"
    return pins


class Mirror:
    """A loopback HTTP server over a folder, recording the paths asked for."""

    def __init__(self, folder: Path):
        self.requests: list[str] = []
        mirror = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                mirror.requests.append(self.path.lstrip("/"))

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=folder))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def standin(tmp_path, monkeypatch):
    """The environment of a harness with a stand-in mirror, its own cache, and the stand-ins' pins."""
    pins = build_standins(tmp_path / "mirror")
    mirror = Mirror(tmp_path / "mirror")
    env = {
        "HARNESS_CACHE_DIR": str(tmp_path / "cache"),
        "HARNESS_TFLM_MIRROR": mirror.url,
        "HARNESS_TFLM_PINS": str(write_pins(tmp_path / "pins.toml", pins)),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("HARNESS_TFLM_TREE", raising=False)
    yield argparse.Namespace(env=os.environ.copy(), mirror=mirror, pins=pins, cache=tmp_path / "cache", root=tmp_path)
    mirror.close()


def harness(env, *args, **extra_env):
    return run_harness_command([*args], env=env | extra_env, timeout=300)


def nothing_half_written(cache: Path):
    trees = cache / "tflm-trees"
    assert not trees.is_dir() or not list(trees.iterdir()), list(trees.iterdir())
    archives = cache / "tflm-archives"
    assert not archives.is_dir() or not [p for p in archives.iterdir() if p.name.endswith(".partial")]


@pytest.mark.slow
def test_prepare_places_patched_downloads_and_generates_the_tree(standin):
    done = harness(standin.env, "tflm", "prepare", "--board", "nucleo_h743")
    assert done.returncode == 0, done.stderr
    key = board_recipe(get_board("nucleo_h743")).key
    folder = standin.cache / "tflm-trees" / key
    tree = folder / "tree"
    assert (tree / "tensorflow/lite/micro/micro_interpreter.h").is_file()
    assert (tree / "tensorflow/lite/micro/makefile_options.txt").read_text() == CMSIS_NN_OPTIONS
    assert (tree / "third_party/cmsis_nn/Include/arm_nnfunctions.h").is_file()
    assert "patched by TFLM" in (tree / "third_party/kissfft/kiss_fft.h").read_text()
    assert sorted(p.name for p in folder.iterdir()) == ["recipe.json", "tree"]  # the checkout is gone
    assert sorted(p.name for p in (standin.cache / "tflm-trees").iterdir()) == [key]
    record = json.loads((folder / "recipe.json").read_text())
    assert record["key"] == key and record["makefile_options"] == CMSIS_NN_OPTIONS
    assert record["tflite_micro"]["commit"] == COMMIT
    assert [a["name"] for a in record["third_party"]] == [
        "flatbuffers", "gemmlowp", "ruy", "kissfft", "CMSIS_6", "Cortex_DFP", "CMSIS-NN"
    ]  # fmt: skip
    assert sorted(standin.mirror.requests) == sorted(
        [standin.pins["tflite_micro"]["file"]] + [entry["file"] for entry in standin.pins["third_party"]]
    )
    assert "create_tflm_tree.py" in done.stderr and "first firmware build" in done.stderr
    assert key in done.stdout and str(tree) in done.stdout

    # Cached by recipe: the same board again, or one with the same recipe, fetches and generates nothing.
    asked = len(standin.mirror.requests)
    for board in ("nucleo_h743", "qemu_m7"):
        again = harness(standin.env, "tflm", "prepare", "--board", board)
        assert again.returncode == 0 and "already prepared" in again.stdout, again.stderr
    # Another CPU is another recipe: a tree of its own, from the archives already downloaded.
    m4 = harness(standin.env, "tflm", "prepare", "--board", "qemu_m4", "--json")
    assert m4.returncode == 0, m4.stderr
    m4_tree = Path(json.loads(m4.stdout)["tree"])
    assert "TARGET_ARCH=cortex-m4" in (m4_tree / "tensorflow/lite/micro/makefile_options.txt").read_text()
    assert len(standin.mirror.requests) == asked


def test_a_folder_mirror_works_too(standin):
    env = standin.env | {"HARNESS_TFLM_MIRROR": str(standin.root / "mirror")}
    done = harness(env, "tflm", "prepare", "--board", "qemu_m4")
    assert done.returncode == 0, done.stderr
    assert not standin.mirror.requests


@pytest.mark.slow
def test_list_and_remove(standin):
    assert harness(standin.env, "tflm", "prepare", "--board", "nucleo_h743").returncode == 0
    key = board_recipe(get_board("nucleo_h743")).key
    sharing = sorted(name for name, board in all_boards().items() if (r := board_recipe(board)) and r.key == key)
    assert {"nucleo_h743", "qemu_m7"} <= set(sharing)  # the Cortex-M7 boards share one tree
    listing = json.loads(harness(standin.env, "tflm", "list", "--json").stdout)
    assert [(t["key"], t["boards"]) for t in listing["trees"]] == [(key, sharing)]
    assert listing["trees"][0]["recipe"]["files"] > 0
    text = harness(standin.env, "tflm", "list").stdout
    assert key in text and ", ".join(sharing) in text and "MB" in text
    assert "esp32dev: TFLM is the ESP-IDF component espressif/esp-tflite-micro" in text
    assert "qemu_m4: tree" in text and "not prepared yet" in text

    assert_refused_in_one_line(harness(standin.env, "tflm", "remove", "0000"), "names 0 cached trees")
    removed = harness(standin.env, "tflm", "remove", key[:6])
    assert removed.returncode == 0 and key in removed.stdout
    assert not (standin.cache / "tflm-trees" / key).exists()
    assert harness(standin.env, "tflm", "prepare", "--board", "qemu_m4").returncode == 0
    assert harness(standin.env, "tflm", "remove", "--board", "qemu_m4").returncode == 0
    assert harness(standin.env, "tflm", "remove", "--all").returncode == 0
    assert not (standin.cache / "tflm-archives").exists()
    assert json.loads(harness(standin.env, "tflm", "list", "--json").stdout)["trees"] == []


def test_an_archive_that_does_not_match_its_pin_is_refused(standin):
    for entry in standin.pins["third_party"]:
        if entry["name"] == "CMSIS-NN":
            entry["sha256"] = "0" * 64
    env = standin.env | {"HARNESS_TFLM_PINS": str(write_pins(standin.root / "wrong.toml", standin.pins))}
    done = harness(env, "tflm", "prepare", "--board", "nucleo_h743")
    assert_refused_in_one_line(done, "CMSIS-NN", standin.mirror.url, "harness pins " + "0" * 64)
    nothing_half_written(standin.cache)
    assert not list((standin.cache / "tflm-archives").glob("*CMSIS-NN*"))


def test_offline_is_one_line_naming_the_url_and_the_way_out(standin):
    env = standin.env | {"HARNESS_TFLM_MIRROR": f"http://127.0.0.1:{closed_port()}/"}
    done = harness(env, "tflm", "prepare", "--board", "nucleo_h743")
    url = env["HARNESS_TFLM_MIRROR"] + standin.pins["tflite_micro"]["file"]
    assert_refused_in_one_line(done, f"could not fetch {url}", "--tflm PATH", "HARNESS_TFLM_MIRROR", "docs/tflm.md")
    nothing_half_written(standin.cache)


def test_without_a_mirror_the_pinned_urls_are_used(standin):
    """No HARNESS_TFLM_MIRROR: the pins' own URLs (here on a closed loopback port, so no test goes out)."""
    upstream = f"http://127.0.0.1:{closed_port()}/upstream/"
    for entry in [standin.pins["tflite_micro"], *standin.pins["third_party"]]:
        entry["url"] = upstream + entry["file"]
    env = {k: v for k, v in standin.env.items() if k != "HARNESS_TFLM_MIRROR"}
    env["HARNESS_TFLM_PINS"] = str(write_pins(standin.root / "upstream.toml", standin.pins))
    done = harness(env, "tflm", "prepare", "--board", "qemu_m7")
    assert_refused_in_one_line(done, f"could not fetch {upstream}tflite-micro-", "--tflm PATH")
    nothing_half_written(standin.cache)


@pytest.mark.slow
def test_commands_that_build_firmware_go_through_it(standin, small_model):
    """generate and flash (a real board) and eval (a QEMU board) without --tflm: the board's tree is fetched."""
    env = standin.env | {"HARNESS_TFLM_MIRROR": f"http://127.0.0.1:{closed_port()}/"}
    model = ["--model", "wv_quality_k_2_c_3"]
    for command in (
        ["firmware", "generate", "--board", "nucleo_h743", *model, "--out", str(standin.root / "build")],
        ["flash", "--board", "nucleo_h743", *model, "--out", str(standin.root / "build"), "--port", "/dev/null"],
        ["eval", "--board", "qemu_m7", *model, "--limit", "1", "--results", str(standin.root / "results")],
    ):
        assert_refused_in_one_line(harness(env, *command), "could not fetch", "--tflm PATH")
    nothing_half_written(standin.cache)


def test_the_prepared_tree_is_what_a_build_gets_and_tflm_wins(standin, tmp_path, monkeypatch):
    from harness.api.resolve import emulated_tflm_tree, tflm_tree

    nucleo, qemu, esp32, sim = map(get_board, ("nucleo_h743", "qemu_m7", "esp32dev", "sim"))
    tree = tflm_tree(argparse.Namespace(tflm=None), nucleo)
    assert tree.root == (standin.cache / "tflm-trees" / board_recipe(nucleo).key / "tree").resolve()
    assert emulated_tflm_tree(argparse.Namespace(tflm=None), qemu).root == tree.root
    assert emulated_tflm_tree(argparse.Namespace(tflm=None), nucleo) is None  # eval runs what was flashed
    assert tflm_tree(argparse.Namespace(tflm=None), esp32) is None  # esp-tflite-micro, an IDF component
    assert tflm_tree(argparse.Namespace(tflm=None), sim) is None
    # --tflm and HARNESS_TFLM_TREE come first, and need no network.
    own = tmp_path / "own"
    (own / "tensorflow/lite/micro").mkdir(parents=True)
    (own / "tensorflow/lite/micro/micro_interpreter.h").write_text("")
    monkeypatch.setenv("HARNESS_TFLM_MIRROR", f"http://127.0.0.1:{closed_port()}/")
    assert tflm_tree(argparse.Namespace(tflm=str(own)), qemu).root == own.resolve()
    monkeypatch.setenv("HARNESS_TFLM_TREE", str(own))
    assert tflm_tree(argparse.Namespace(tflm=None), get_board("qemu_m4")).root == own.resolve()


def test_esp32_says_where_its_tflm_comes_from(standin):
    done = harness(standin.env, "tflm", "prepare", "--board", "esp32dev")
    assert done.returncode == 0, done.stderr
    assert "ESP-IDF component espressif/esp-tflite-micro ==1.3.8" in done.stdout and "esp-nn" in done.stdout
    assert "harness prepares no tree" in done.stdout and not standin.mirror.requests


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("fail", "create_tflm_tree.py failed"),
        ("hang", "did not finish within 2 s"),
        ("download", "downloaded something itself"),
    ],
)
def test_a_generator_that_fails_leaves_no_tree(standin, mode, expected):
    done = harness(
        standin.env, "tflm", "prepare", "--board", "qemu_m4", STANDIN_GENERATOR=mode, HARNESS_TFLM_GENERATE_TIMEOUT="2"
    )
    assert done.returncode == exits.BUILD and expected in done.stderr and "Traceback" not in done.stderr, done.stderr
    nothing_half_written(standin.cache)
    log = standin.cache / "tflm-logs" / f"{board_recipe(get_board('qemu_m4')).key}.log"
    assert str(log) in done.stderr and log.is_file()


def test_an_upstream_checkout_is_refused_with_the_fix(tmp_path):
    checkout = tmp_path / "tflite-micro"
    for name in (
        "tensorflow/lite/micro/micro_interpreter.h",
        "tensorflow/lite/micro/tools/make/Makefile",
        "tensorflow/lite/micro/examples/hello_world/hello_world_test.cc",
    ):
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text("")
    with pytest.raises(UserError, match=r"checkout, not a TFLM tree.*create_tflm_tree\.py.*harness tflm prepare"):
        TflmTree(checkout)
    fixture_model("wake_vision_zoo/wv_quality_k_2_c_3.tflite")
    done = harness(
        os.environ.copy(), "firmware", "generate", "--board", "nucleo_h743", "--model", "wv_quality_k_2_c_3",
        "--tflm", str(checkout), "--out", str(tmp_path / "build"),
    )  # fmt: skip
    assert_refused_in_one_line(done, "is a tflite-micro checkout", "create_tflm_tree.py", "harness tflm prepare")


def test_files_sha256_is_the_files_not_the_zip_encoding(tmp_path):
    files = {"a.h": "one\n", "sub/b.cc": "two\n"}
    deflated = _zip(tmp_path / "deflated.zip", "lib-1.0", files)
    stored = _zip(tmp_path / "stored.zip", "lib-v1.0", dict(reversed(files.items())), zipfile.ZIP_STORED)
    assert files_sha256(deflated) == files_sha256(stored)  # top folder, order and compression do not count
    changed = _zip(tmp_path / "changed.zip", "lib-1.0", files | {"a.h": "one!\n"})
    assert files_sha256(changed) != files_sha256(deflated)
    renamed = _zip(tmp_path / "renamed.zip", "lib-1.0", {"c.h": "one\n", "sub/b.cc": "two\n"})
    assert files_sha256(renamed) != files_sha256(deflated)


def test_recipes_are_board_data():
    pins = load_pins()
    nucleo = board_recipe(get_board("nucleo_h743"), pins)
    assert nucleo.makefile_options == CMSIS_NN_OPTIONS
    assert [a.name for a in nucleo.third_party] == [
        "flatbuffers", "gemmlowp", "ruy", "kissfft", "CMSIS_6", "Cortex_DFP", "CMSIS-NN"
    ]  # fmt: skip
    assert board_recipe(get_board("qemu_m7"), pins).key == nucleo.key
    assert board_recipe(get_board("qemu_m4"), pins).key != nucleo.key
    reference = Recipe("reference", "", "", pins)  # TFLM's defaults: reference kernels, no CMSIS
    assert reference.makefile_options == "" and [a.name for a in reference.third_party] == [
        "flatbuffers", "gemmlowp", "ruy", "kissfft"
    ]  # fmt: skip
    for board in ("esp32dev", "nano33ble", "sim"):
        assert board_recipe(get_board(board), pins) is None
    assert pins.commit == COMMIT and pins.placeholders == ("pigweed",)
    assert tflm_pins.tflm_source(get_board("nano33ble")) == "lib_deps"


@pytest.mark.slow
def test_flash_without_tflm_prepares_the_tree_then_builds_uploads_and_checks(standin, small_model, tmp_path):
    """The online path end to end: the tree comes from the (loopback) mirror, PlatformIO is a stand-in `pio`
    that succeeds, and the board on a pseudo-terminal reports the model and build id harness generated."""
    from harness.api.resolve import tflm_tree
    from harness.firmware.platformio import generate_project
    from harness.model.tflite_file import read_tflite
    from tests.unit.firmware.test_platformio_projects import FAKE_PIO, _BoardOnPty

    pio = tmp_path / "bin" / "pio"
    pio.parent.mkdir()
    pio.write_text(FAKE_PIO.format(python=sys.executable))
    pio.chmod(0o755)
    env = standin.env | {"HARNESS_PIO": str(pio), "FAKE_PIO_LOG": str(tmp_path / "pio.log")}
    assert harness(env, "tflm", "prepare", "--board", "nucleo_h743").returncode == 0
    nucleo = get_board("nucleo_h743")
    out = tmp_path / "build"
    expected = generate_project(
        nucleo, read_tflite(small_model), "wv_quality_k_2_c_3", tflm_tree(argparse.Namespace(tflm=None), nucleo), out
    )
    with _BoardOnPty(small_model, expected.build_id) as port:
        flash = ["flash", "--board", "nucleo_h743", "--model", "wv_quality_k_2_c_3", "--out", str(out), "--port", port]
        done = harness(env, *flash)
    assert done.returncode == 0, done.stderr
    assert f"flashed {expected.build_id}" in done.stdout
    assert (tmp_path / "pio.log").read_text().split()[:2] == ["run", "-d"]

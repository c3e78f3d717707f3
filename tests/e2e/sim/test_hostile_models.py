"""Hostile board files, model cards and model files (issue #31, models): each is refused in one line naming the
file (and the field), without a hang, a traceback or a file changed. Generated per way a file can be hostile
(tests/hostile.py) for each way in: `--board path.toml`, a file in HARNESS_BOARDS_DIR, `--model card.toml`
(here `models inspect card.toml`) and `models inspect model.tflite`."""

import math
import re
from pathlib import Path

import numpy as np
import pytest

from harness.paths import boards_dir, models_dir
from tests.conftest import FIXTURE_MODELS
from tests.hostile import (
    FIFO,
    NOT_A_FILE,
    NOT_TEXT,
    NOT_TOML,
    Case,
    every_bad_form,
    make_files,
    run_case,
    run_harness,
    tree,
)

SIM_BOARD = (boards_dir() / "sim.toml").read_text().replace('id = "sim"', 'id = "mine"')
CARD = (models_dir() / "wv_quality_k_2_c_3.toml").read_text()
KWS_CARD = (models_dir() / "mlperf_tiny_kws.toml").read_text()
SMALL_MODEL = FIXTURE_MODELS / "wake_vision_zoo" / "wv_quality_k_2_c_3.tflite"
FILE_FORMS = {**NOT_A_FILE, **NOT_TEXT, **NOT_TOML}
USER_BOARDS = "user-boards"


def _changed(text: str, old: str, new: str) -> bytes:
    assert re.search(old, text, flags=re.M), old
    return re.sub(old, lambda _: new, text, count=1, flags=re.M).encode()


# A board file's content, changed: (how, the file, the words of its refusal).
BAD_BOARDS = {
    "id-escapes": (_changed(SIM_BOARD, r'^id = "mine"', 'id = "x/../../../escaped"'), ("not a valid id",)),
    "id-newline": (_changed(SIM_BOARD, r'^id = "mine"', 'id = "a\\nb"'), ("'id' holds the control character",)),
    "name-escape-code": (_changed(SIM_BOARD, r"^name = .*", 'name = "\\u001b[2Jgone"'), ("'name'", "control")),
    "core-newline": (_changed(SIM_BOARD, r"^core = .*", 'core = "host\\n[evil]"'), ("'core'", "control")),
    "id-empty": (_changed(SIM_BOARD, r'^id = "mine"', 'id = ""'), ("not a valid id",)),
    "id-number": (_changed(SIM_BOARD, r'^id = "mine"', "id = 5"), ("field 'id'",)),
    "invoke-inf": (
        _changed(SIM_BOARD, r"^emulate_invoke_ms = 0", "emulate_invoke_ms = inf"),
        ("'sim.emulate_invoke_ms' is inf", "not a finite number"),
    ),
    "invoke-nan": (_changed(SIM_BOARD, r"^emulate_invoke_ms = 0", "emulate_invoke_ms = nan"), ("is nan",)),
    "baud-1e400": (_changed(SIM_BOARD, r"^link_baud = 0", "link_baud = 1e400"), ("'sim.link_baud' is inf",)),
    "baud-text": (_changed(SIM_BOARD, r"^link_baud = 0", 'link_baud = "fast"'), ("field 'sim.link_baud'",)),
    "flash-text": (_changed(SIM_BOARD, r"^flash_bytes = .*", 'flash_bytes = "lots"'), ("field 'memory.flash_bytes'",)),
    "unknown-key": (_changed(SIM_BOARD, r"^core = ", 'colour = "red"\ncore = '), ("unknown field 'colour'",)),
    "unknown-sim-key": (_changed(SIM_BOARD, r"^\[sim\]", "[sim]\nlink_bauds = 1"), ("unknown field 'sim.link_bauds'",)),
    "family-escapes": (
        _changed(SIM_BOARD, r"^\[firmware\]", '[firmware]\nfamily = "../../../../tmp"'),
        ("firmware.family", "not a valid id"),
    ),
    "huge-int": (_changed(SIM_BOARD, r"^core = ", "cpu_hz = " + "9" * 30 + "\ncore = "), ("30-digit integer",)),
}


def _board_file_cases():
    args = ("boards", "link-test", "--board", "board.toml")
    yield from every_bad_form("board-file", args, "board.toml", FILE_FORMS)
    for how, (content, words) in BAD_BOARDS.items():
        yield Case(f"board-file-{how}", args, ("board.toml", *words), {"board.toml": content})


def _user_board_cases():
    """A damaged file in HARNESS_BOARDS_DIR: a command resolving a board by id refuses, naming the file."""
    name = f"{USER_BOARDS}/damaged.toml"
    args = ("boards", "link-test", "--board", "sim")
    yield from every_bad_form("user-board", args, name, FILE_FORMS)
    for how in ("id-escapes", "id-newline", "invoke-inf", "unknown-key", "family-escapes"):
        content, words = BAD_BOARDS[how]
        yield Case(f"user-board-{how}", args, (name, *words, "harness boards list"), {name: content})


# A card's content, changed.
BAD_CARDS = {
    "name-escapes": (_changed(CARD, r'^name = "wv_quality_k_2_c_3"', 'name = "../../x"'), ("name is '../../x'",)),
    "name-newline": (_changed(CARD, r'^name = "wv_quality_k_2_c_3"', 'name = "a\\nb"'), ("'name'", "control")),
    "title-newline": (_changed(CARD, r"^title = .*", 'title = "a\\nb"'), ("'title'", "control character")),
    "notes-multiline": (_changed(CARD, r"^notes = .*", 'notes = "a\\nb"\nnots = 1'), ("unknown field 'nots'",)),
    "name-long": (_changed(CARD, r'^name = "wv_quality_k_2_c_3"', f'name = "{"a" * 65}"'), ("not a valid id",)),
    "misspelt-key": (_changed(CARD, r"^labels = ", "lables = "), ("unknown field 'output.lables'",)),
    "unknown-table": (CARD.encode() + b"\n[extra]\na = 1\n", ("unknown field 'extra'",)),
    "title-number": (_changed(CARD, r"^title = .*", "title = 5"), ("title is 5",)),
    "threshold-inf": (
        _changed(CARD, r'^kind = "softmax"', 'kind = "softmax"\nthreshold = inf'),
        ("'output.threshold' is inf", "not a finite number"),
    ),
    "threshold-nan": (_changed(CARD, r'^kind = "softmax"', 'kind = "softmax"\nthreshold = -nan'), ("is nan",)),
    "frontend-scale-nan": (_changed(KWS_CARD, r"^scale = 0.25", "scale = nan"), ("'frontend.scale' is nan",)),
    "frontend-channels-text": (
        _changed(KWS_CARD, r"^channels = 10", 'channels = "ten"'),
        ("field 'frontend.channels'",),
    ),
    "size-huge": (_changed(CARD, r"^size = .*", "size = [" + "9" * 25 + ", 1]"), ("card.toml",)),
}


def _card_cases():
    args = ("models", "inspect", "card.toml", "--no-fit")
    yield from every_bad_form("card", args, "card.toml", FILE_FORMS)
    for how, (content, words) in BAD_CARDS.items():
        yield Case(f"card-{how}", args, ("card.toml", *words), {"card.toml": content})


def _model(change) -> bytes | None:
    """The small fixture model after change(model, subgraph), or None without the shared fixtures."""
    if not SMALL_MODEL.is_file():
        return None
    from tests.model_surgery import mutate

    return mutate(SMALL_MODEL.read_bytes(), change)


def _scale(where: str, value: float):
    def change(model, graph):
        index = {"input": graph.inputs[0], "output": graph.outputs[0]}.get(where)
        tensor = graph.tensors[index if index is not None else graph.operators[2].outputs[0]]
        tensor.quantization.scale = np.full(len(tensor.quantization.scale), value, dtype=np.float32)

    return change


def _first_reads_last(model, graph):
    graph.operators[0].inputs[0] = graph.operators[-1].outputs[0]


def _custom_op_not_utf8(model, graph):
    code = model.operatorCodes[graph.operators[0].opcodeIndex]
    code.builtinCode = code.deprecatedBuiltinCode = 32  # CUSTOM
    code.customCode = b"\xff\xfeop\x80"


BAD_MODELS = {
    "empty": (lambda: b"", ("not a TFLite model",)),
    "text": (lambda: "caf\u00e9 not a model".encode("latin-1"), ("not a TFLite model",)),
    "truncated": (lambda: SMALL_MODEL.read_bytes()[:200] if SMALL_MODEL.is_file() else None, ("corrupt",)),
    "input-scale-nan": (lambda: _model(_scale("input", math.nan)), ("quantization scale nan", "not a finite")),
    "output-scale-inf": (lambda: _model(_scale("output", math.inf)), ("quantization scale inf",)),
    "inner-scale-neg-inf": (lambda: _model(_scale("inner", -math.inf)), ("tensor", "quantization scale -inf")),
    "first-reads-last": (lambda: _model(_first_reads_last), ("operator 0", "LiteRT refuses", "TFLM would run")),
    "custom-op-not-utf8": (lambda: _model(_custom_op_not_utf8), ("custom \\xff\\xfeop\\x80",)),
}


def _model_cases():
    args = ("models", "inspect", "model.tflite", "--no-fit")
    yield from every_bad_form("model", args, "model.tflite", NOT_A_FILE)
    for how, (make, words) in BAD_MODELS.items():
        yield Case(f"model-{how}", args, ("model.tflite", *words), {"model.tflite": make})


def _float_model_cases():
    args = ("models", "convert", "--card", "mlperf_tiny_vww_float", "--model", "float.keras", "--out", "o.tflite")
    yield from every_bad_form("float-model", args, "float.keras", NOT_A_FILE)


CASES = [*_board_file_cases(), *_card_cases(), *_model_cases(), *_float_model_cases()]


def _made(case: Case) -> Case:
    """The case with its model bytes made (skipped without the shared fixtures)."""
    files = {name: content() if callable(content) else content for name, content in case.files.items()}
    if any(content is None for content in files.values()):
        pytest.skip(f"needs {SMALL_MODEL} (the shared fixtures)")
    return Case(case.id, case.args, case.expected, files, case.code)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_hostile_board_card_or_model_file_is_refused_in_one_line(tmp_path, case):
    run_case(tmp_path, _made(case))


USER_CASES = list(_user_board_cases())


@pytest.mark.parametrize("case", USER_CASES, ids=[case.id for case in USER_CASES])
def test_a_damaged_user_board_file_refuses_a_board_id_naming_the_file(tmp_path, case):
    run_case(tmp_path, case, env={"HARNESS_BOARDS_DIR": USER_BOARDS})


@pytest.mark.parametrize("form", ["fifo", "dev-zero", "not-utf8", "deep-toml", "id-escapes", "invoke-inf"])
def test_boards_list_lists_the_good_boards_and_names_each_damaged_file(tmp_path, form):
    content = FILE_FORMS[form][0] if form in FILE_FORMS else BAD_BOARDS[form][0]
    files = {f"{USER_BOARDS}/damaged.toml": content, f"{USER_BOARDS}/good.toml": SIM_BOARD.encode()}
    make_files(tmp_path, files)
    before = tree(tmp_path)
    done = run_harness(tmp_path, "boards", "list", env={"HARNESS_BOARDS_DIR": USER_BOARDS})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    listed = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    assert "sim" in listed and "mine" in listed
    damaged = [line for line in done.stderr.splitlines() if "damaged.toml" in line]
    assert len(damaged) == 1 and "not listed" in damaged[0], done.stderr
    assert tree(tmp_path) == before


def test_boards_list_json_names_the_damaged_files(tmp_path):
    import json

    make_files(tmp_path, {f"{USER_BOARDS}/a.toml": FIFO, f"{USER_BOARDS}/b.toml": BAD_BOARDS["id-newline"][0]})
    done = run_harness(tmp_path, "boards", "list", "--json", env={"HARNESS_BOARDS_DIR": USER_BOARDS})
    assert done.returncode == 0, done.stderr
    damaged = json.loads(done.stdout)["damaged"]
    assert [Path(d["file"]).name for d in damaged] == ["a.toml", "b.toml"]
    assert "FIFO" in damaged[0]["problem"] and "control character" in damaged[1]["problem"]


PINS_CASES = list(every_bad_form("tflm-pins", ("tflm", "list"), "pins.toml", FILE_FORMS))


@pytest.mark.parametrize("case", PINS_CASES, ids=[case.id for case in PINS_CASES])
def test_a_hostile_tflm_pins_file_is_refused_in_one_line(tmp_path, case):
    run_case(tmp_path, case, env={"HARNESS_TFLM_PINS": "pins.toml"})


def test_a_build_record_is_looked_up_only_inside_the_build_folder(tmp_path):
    import json

    from harness.firmware.platformio import BUILD_RECORD, recorded_build

    outside = tmp_path / "outside" / "x"
    outside.mkdir(parents=True)
    (outside / BUILD_RECORD).write_text(json.dumps({"build_id": "../outside-1"}))
    build = tmp_path / "build"
    (build / "sim" / "a").mkdir(parents=True)
    (build / "sim" / "a" / BUILD_RECORD).write_bytes(b"[" * 10000)  # damaged: no record, no traceback
    assert recorded_build("../outside-1", build) is None
    assert recorded_build("sim-1", build) is None


def test_inspect_shows_a_file_name_that_is_not_utf8_escaped(tmp_path):
    import json
    import os

    if not SMALL_MODEL.is_file():
        pytest.skip(f"needs {SMALL_MODEL} (the shared fixtures)")
    name = os.fsdecode(b"\xffmodel.tflite")
    (tmp_path / name).write_bytes(SMALL_MODEL.read_bytes())
    done = run_harness(tmp_path, "models", "inspect", name, "--no-fit", "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)["model"]
    assert shown == "\\xffmodel.tflite"
    shown.encode("utf-8")  # no lone surrogate: any JSON reader takes it

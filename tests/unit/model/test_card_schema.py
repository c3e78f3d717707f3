"""Model cards and board files against their declared schemas: whatever a file holds, loading it gives a card
(or a board) or one UserError line naming the file; never another exception (hypothesis property tests), and
the schema names an unknown or mistyped key wherever it is."""

import copy
import re
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.boards import Board, board_from_data
from harness.errors import UserError
from harness.model.card import ModelCard
from harness.model.card_schema import CardFile
from harness.model.cards import card_from_data, load_card
from harness.paths import boards_dir, models_dir

CARD_PATH = Path("/nowhere/card.toml")
BOARD_PATH = Path("/nowhere/board.toml")
SHIPPED_CARDS = sorted(models_dir().glob("*.toml"))
SHIPPED_BOARDS = sorted(boards_dir().glob("*.toml"))
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# What a TOML file can hold: text, whole numbers within what reading lets through (|n| <= 2**64), finite
# floats, booleans, and lists and tables of those.
SCALARS = (
    st.text(max_size=12)
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
)
KEYS = st.sampled_from(
    ["name", "kind", "labels", "size", "sha256", "url", "path", "pipeline", "id", "hal", "family", "baudrate"]
) | st.text(min_size=1, max_size=8)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3))


def _toml(path: Path) -> dict:
    return tomllib.loads(path.read_text())


def _mutated(data: dict, draw) -> dict:
    """data with one key's value replaced by anything, or one key added, at any depth."""
    data = copy.deepcopy(data)
    table = data
    while True:
        tables = [key for key, value in table.items() if isinstance(value, dict)]
        if not tables or draw(st.booleans()):
            break
        table = table[draw(st.sampled_from(tables))]
    key = draw(st.sampled_from(sorted(table)) | KEYS) if table else draw(KEYS)
    table[key] = draw(VALUES)
    return data


def _loads_or_refuses(load, data: dict, path: Path, made: type) -> None:
    try:
        result = load(data, path)
    except UserError as refused:
        message = str(refused)
        assert str(path) in message and "\n" not in message, message
        return
    assert isinstance(result, made)


@PROPERTY
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_any_table_is_a_card_or_one_line_naming_the_card(data):
    _loads_or_refuses(card_from_data, data, CARD_PATH, ModelCard)


@PROPERTY
@given(st.sampled_from(SHIPPED_CARDS), st.data())
def test_a_shipped_card_changed_anywhere_is_a_card_or_one_line(path, data):
    _loads_or_refuses(card_from_data, _mutated(_toml(path), data.draw), CARD_PATH, ModelCard)


@PROPERTY
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_any_table_is_a_board_or_one_line_naming_the_board_file(data):
    _loads_or_refuses(board_from_data, data, BOARD_PATH, Board)


@PROPERTY
@given(st.sampled_from(SHIPPED_BOARDS), st.data())
def test_a_shipped_board_changed_anywhere_is_a_board_or_one_line(path, data):
    _loads_or_refuses(board_from_data, _mutated(_toml(path), data.draw), BOARD_PATH, Board)


def test_every_shipped_card_matches_the_declared_schema():
    for path in SHIPPED_CARDS:
        CardFile.model_validate(_toml(path))


BASE_CARD = models_dir() / "tflm_micro_speech.toml"


@pytest.mark.parametrize(
    ("table", "key", "value", "expected"),
    [
        (None, "nmae", "x", "unknown field 'nmae'"),
        ("output", "labesl", ["a"], "unknown field 'output.labesl'"),
        ("frontend", "sacle", 1.0, "unknown field 'frontend.sacle'"),
        ("streaming", "keyword", ["yes"], "unknown field 'streaming.keyword'"),
        (None, "title", 5, "title is 5"),
        (None, "notes", ["a"], "notes is ['a']"),
        ("source", "mirror_path", 5, "source.mirror_path is 5"),
        ("frontend", "mirror_path", True, "frontend.mirror_path is True"),
        (None, "licence", {"a": 1}, "licence is {'a': 1}"),
        ("streaming", "keywords", [1], "streaming.keywords is [1]"),
        ("output", "silence_label", 3, "output.silence_label is 3"),
    ],
)
def test_a_misspelt_or_mistyped_key_is_named(table, key, value, expected):
    data = _toml(BASE_CARD)
    (data[table] if table else data)[key] = value
    with pytest.raises(UserError, match=re.escape(expected)) as refused:
        card_from_data(data, CARD_PATH)
    assert str(CARD_PATH) in str(refused.value)


KWS_CARD = models_dir() / "mlperf_tiny_kws.toml"  # a microfrontend: settings only the schema checks at load


@pytest.mark.parametrize(
    ("key", "value"), [("channels", "ten"), ("channels", 10.5), ("lower_band_hz", "low"), ("log_scale_shift", True)]
)
def test_a_mistyped_microfrontend_setting_is_named(key, value):
    data = _toml(KWS_CARD)
    data["frontend"][key] = value
    with pytest.raises(UserError, match=re.escape(f"field 'frontend.{key}'")):
        card_from_data(data, CARD_PATH)


@pytest.mark.parametrize("name", ["a\nb", "x/../../../escaped", "", "-x", "a" * 65, "caf\u00e9"])
def test_a_card_name_that_is_not_an_id_is_refused(name):
    data = {**_toml(BASE_CARD), "name": name}
    with pytest.raises(UserError, match="name") as refused:
        card_from_data(data, CARD_PATH)
    assert "\n" not in str(refused.value)


def test_a_card_nan_is_refused_naming_its_field(tmp_path):
    card = tmp_path / "card.toml"
    text = (models_dir() / "mlperf_tiny_kws.toml").read_text()
    for written, shown in (("nan", "nan"), ("inf", "inf"), ("-inf", "-inf")):
        card.write_text(text.replace("scale = 0.25", f"scale = {written}"))
        with pytest.raises(UserError, match=f"field 'frontend.scale' is {shown}, not a finite number"):
            load_card(str(card))

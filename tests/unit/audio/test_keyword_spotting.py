"""Keyword spotting through eval: the keyword demo set, the deployed frontend, per-class subsets."""

import json
import os
import shutil

import numpy as np
import pytest

from harness.audio.clips import read_clip, write_clip
from harness.audio.dataset import load_keyword_dataset
from harness.audio.demo import KEYWORDS, OTHER_WORDS, SILENCE_CLIPS
from harness.errors import UserError
from harness.eval.subsets import class_subsets
from harness.model.cards import load_card
from harness.samples import Sample
from tests.conftest import SHARED, fixture_model
from tests.forked_cli import run_harness_command

needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="the keyword demo set needs espeak-ng")


def _harness(tmp_path, *args):
    return run_harness_command([*args], cwd=tmp_path, env=os.environ.copy())


@needs_espeak
def test_keyword_demo_set_maps_words_to_the_cards_classes():
    card = load_card("tflm_micro_speech")
    dataset = load_keyword_dataset("demo", card)
    labels = [card.output.labels[s.label] for s in dataset.samples]
    assert labels.count("silence") == SILENCE_CLIPS
    assert labels.count("yes") == labels.count("no") > 0
    assert labels.count("unknown") == len(labels) - SILENCE_CLIPS - 2 * labels.count("yes")
    assert len({s.id for s in dataset.samples}) == len(dataset.samples) >= len(KEYWORDS) + len(OTHER_WORDS)
    clip = read_clip(dataset.samples[0].image_path, 16000)
    assert clip.dtype == np.int16 and len(clip) == 16000 and np.abs(clip).max() > 3000  # spoken, not silent


@pytest.mark.parametrize("word", ["yes", "no", "silence"])
def test_the_deployed_frontend_feeds_micro_speech_its_reference_clips(word):
    """TFLM's own test clips, through the card's frontend and the TFLM host interpreter."""
    from harness.audio.frontend import keyword_preparation
    from harness.model.fetch import obtain_model
    from harness.model.references import TflmReference
    from harness.model.tflite_file import read_tflite

    clip = SHARED / "fixtures" / "audio" / f"{word}_1000ms.wav"
    if not clip.is_file():
        pytest.skip("needs ../shared/fixtures/audio (the shared fixtures are absent in a fresh clone)")
    fixture_model("tflm/audio_preprocessor_int8.tflite")
    card = load_card("tflm_micro_speech")
    model = read_tflite(obtain_model(card))
    tensor = keyword_preparation(card, model.input).tensor_of(Sample(clip.name, clip, {}))
    assert tensor.shape == (1, 1960) and tensor.dtype == np.int8
    scores = np.frombuffer(TflmReference(model).run(tensor), np.int8)
    assert card.output.labels[int(np.argmax(scores))] == word


@pytest.mark.slow
@needs_espeak
def test_micro_speech_on_the_virtual_board_matches_the_host_byte_for_byte(tmp_path):
    fixture_model("tflm/audio_preprocessor_int8.tflite")
    done = _harness(
        tmp_path, "eval", "--model", "tflm_micro_speech", "--subset", "all,yes,no", "--json", "--results", "r"
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["task"] == "keyword_spotting"
    assert summary["bit_exact"]["tflm"] == summary["samples"] == 90
    confusion = np.array(summary["confusion"]["device"])
    assert confusion.sum() == 90 and confusion.trace() / 90 == pytest.approx(
        summary["subsets"]["all"]["device"]["accuracy"]
    )
    yes = summary["subsets"]["yes"]
    assert yes["positive_class"] == "yes" and yes["n"] == 6 and yes["device"]["f1_wv"] is None


@pytest.mark.slow
@needs_espeak
def test_all_of_all_yes_no_limit_6_is_scored_over_its_own_stratified_draw(tmp_path):
    """The run evaluates the union (6 yes, 6 no, all's 6), but `all` is scored, stored and compared over
    its own 6: 5 unknown and 1 silence of the set's 68/10/6/6, not the 18."""
    import pyarrow.parquet as pq

    fixture_model("tflm/audio_preprocessor_int8.tflite")
    done = _harness(
        tmp_path, "eval", "--model", "tflm_micro_speech", "--subset", "all,yes,no", "--limit", "6", "--json",
        "--results", "r",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["samples"] == 18 and {name: e["n"] for name, e in summary["subsets"].items()} == dict.fromkeys(
        ("all", "yes", "no"), 6
    )
    rows = pq.read_table(tmp_path / summary["run_dir"] / "samples.parquet").to_pydict()
    labels = load_card("tflm_micro_speech").output.labels
    drawn = sorted(labels[label] for label, member in zip(rows["label"], rows["in_all"], strict=True) if member)
    assert drawn == ["silence"] + ["unknown"] * 5
    done = _harness(tmp_path, "runs", "compare", summary["run_id"], summary["run_id"], "--results", "r", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["subsets"]["all"]["n_paired"] == 6


def test_every_declared_audio_pipeline_has_its_frontend():
    from harness.audio.frontend import FRONTENDS
    from harness.model.pipelines import AUDIO_PIPELINES

    assert set(FRONTENDS) == set(AUDIO_PIPELINES)


def test_keyword_dataset_bad_inputs(tmp_path):
    card = load_card("tflm_micro_speech")
    with pytest.raises(UserError, match=r"no labels\.csv"):
        load_keyword_dataset(str(tmp_path), card)
    (tmp_path / "labels.csv").write_text("file,word\nx.wav,yes\n")
    with pytest.raises(UserError, match="lacks the columns filename, label"):
        load_keyword_dataset(str(tmp_path), card)
    with pytest.raises(UserError, match="valid: all, silence, unknown, yes, no"):
        class_subsets("all,maybe", card)


def test_a_clip_in_the_wrong_format_is_unreadable_not_resampled(tmp_path):
    write_clip(tmp_path / "slow.wav", np.zeros(8000, np.int16), 8000)
    with pytest.raises(ValueError, match="needs mono 16-bit at 16000 Hz"):
        read_clip(tmp_path / "slow.wav", 16000)
    (tmp_path / "junk.wav").write_bytes(b"RIFF....not a wave")
    with pytest.raises(ValueError, match="not a readable WAV"):
        read_clip(tmp_path / "junk.wav", 16000)


@pytest.mark.slow
@needs_espeak
def test_the_report_of_a_keyword_run_draws_its_classes(tmp_path):
    """The confusion figure has the card's labels (not a person/non-person 2x2 that drops most clips),
    a subset without clips is n/a rather than a 0 % bar, and there is no Wake Vision F1 panel."""
    import re

    fixture_model("tflm/audio_preprocessor_int8.tflite")
    # In dataset order the first 8 clips are all "yes": the other classes' subsets are empty.
    done = _harness(
        tmp_path, "eval", "--model", "tflm_micro_speech", "--subset", "all,yes,no,silence,unknown", "--limit", "8",
        "--order", "dataset", "--json", "--results", "r",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    empty = [name for name, entry in summary["subsets"].items() if entry["n"] == 0]
    assert empty and all(summary["subsets"][name]["versus"]["tflm"]["max_diff_steps"] is None for name in empty)
    out = tmp_path / "report.html"
    done = _harness(tmp_path, "runs", "report", summary["run_id"], "--results", "r", "--out", str(out))
    assert done.returncode == 0, done.stderr
    figures = dict(re.findall(r'<figure class="plot" data-title="([^"]+)">(<svg.*?</svg>)', out.read_text(), re.S))
    confusion = figures["Confusion matrices"]
    assert all(f">{label}<" in confusion for label in ("silence", "unknown", "yes", "no"))
    assert "person" not in confusion
    scores = figures["Accuracy and F1 per subset"]
    assert "Wake Vision" not in scores and all(f">{name}: n/a<" in scores for name in empty)

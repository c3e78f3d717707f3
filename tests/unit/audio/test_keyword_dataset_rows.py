"""A keyword dataset's labels.csv (issue #31): read as UTF-8 through harness.reading, and every row's clip lies
inside the dataset's clips/ folder."""

import pytest

from harness.audio.dataset import load_keyword_dataset
from harness.errors import UserError
from harness.model.cards import load_card


@pytest.fixture
def card():
    return load_card("tflm_micro_speech")


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ("../../outside.wav,yes", "the clip '../../outside.wav' is not a file inside"),
        ("/etc/passwd,yes", "the clip '/etc/passwd' is not a file inside"),
        ("a.wav,", "line 3: expected filename,label"),
        ("a.wav", "line 3: expected filename,label"),
    ],
)
def test_a_row_outside_the_dataset_or_without_a_label_is_refused(tmp_path, card, row, words):
    (tmp_path / "labels.csv").write_text(f"filename,label\nok.wav,yes\n{row}\n")
    with pytest.raises(UserError, match=r"labels\.csv line") as refused:
        load_keyword_dataset(str(tmp_path), card)
    assert words in str(refused.value)


def test_a_bom_and_clips_inside_are_read(tmp_path, card):
    (tmp_path / "labels.csv").write_bytes(b"\xef\xbb\xbffilename,label\nsub/a.wav,yes\n")
    dataset = load_keyword_dataset(str(tmp_path), card)
    assert [s.image_path for s in dataset.samples] == [tmp_path / "clips" / "sub" / "a.wav"]


def test_labels_that_are_not_utf8_are_refused_naming_the_byte(tmp_path, card):
    (tmp_path / "labels.csv").write_bytes(b"filename,label\ncaf\xe9.wav,yes\n")
    with pytest.raises(UserError, match=r"not UTF-8 text \(byte 0xe9"):
        load_keyword_dataset(str(tmp_path), card)

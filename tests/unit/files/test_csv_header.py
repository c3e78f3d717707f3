"""A header naming a column twice is refused by every CSV reader with a header (harness/reading.py)."""

import pytest

from harness import reading
from harness.errors import UserError
from harness.eval.score_file import read_predictions
from harness.streaming.detections import load_detections
from harness.streaming.ledger import load_ledger


def test_each_column_once_passes_and_empty_names_are_no_columns(tmp_path):
    reading.refuse_duplicate_columns(["filename", "prediction", "", ""], reading.PREDICTIONS, tmp_path / "p.csv")
    reading.refuse_duplicate_columns(None, reading.PREDICTIONS, tmp_path / "p.csv")


def test_a_column_twice_is_named_with_the_file(tmp_path):
    with pytest.raises(UserError, match=r"^predictions file .*p\.csv names the column 'prediction' twice"):
        reading.refuse_duplicate_columns(
            ["filename", "prediction", " prediction"], reading.PREDICTIONS, tmp_path / "p.csv"
        )


def test_the_core_reader_of_records_refuses_it(tmp_path):
    path = tmp_path / "l.csv"
    path.write_text("filename,person,person\na.png,1,0\n")
    with pytest.raises(UserError, match=r"labels file .*names the column 'person' twice"):
        reading.read_csv_records(path, reading.LABELS)


@pytest.mark.parametrize(
    ("read", "text", "words"),
    [
        (read_predictions, "filename,prediction,prediction\na.png,1,0\n", "predictions file"),
        (load_ledger, "label,start_ms,start_ms\nyes,1000,2000\n", "ledger"),
        (load_detections, "label,time_ms,score,reference,label\nyes,1,0.5,decision,no\n", "detections file"),
    ],
    ids=["predictions", "ledger", "detections"],
)
def test_every_reader_with_a_header_refuses_a_column_twice(tmp_path, read, text, words):
    path = tmp_path / "f.csv"
    path.write_text(text)
    with pytest.raises(UserError, match=rf"{words} .*f\.csv names the column '\w+' twice"):
        read(path)

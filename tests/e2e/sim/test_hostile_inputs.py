"""Hostile dataset-side files (issue #31, inputs): every reader of labels, split files, predictions, cleaned
labels, the stream note, annotations, class descriptions, images, shards and LPIRC boxes, given a FIFO, a link
to /dev/zero, a folder, bytes that are no UTF-8, a field over 131,072 characters or digits that are not ASCII;
labels rows that name a file outside their dataset; boxes beyond any image. Each is refused in one line (exit 2)
naming the file (and line), never a hang, a traceback or a changed file."""

import gzip
import io
import os
import struct
import tarfile
import zlib

import numpy as np
import pytest

from harness.eval.demo_dataset import COLUMNS
from tests.hostile import FIFO, NOT_A_FILE, NOT_JSON, NOT_TEXT, Case, every_bad_form, run_case

FLAG_COLUMNS = COLUMNS[1:]
NON_ASCII_ONES = {
    "arabic-indic": "\u0661",
    "extended-arabic-indic": "\u06f1",
    "devanagari": "\u0967",
    "fullwidth": "\uff11",
    "bengali": "\u09e7",
}
HUGE_FIELD = "x" * 131_073  # over Python's default csv field limit (131,072) and harness's 64 KiB


def flag_labels(*rows: tuple[str, dict[str, str]]) -> bytes:
    """A 20-column labels file; each row a file name and the flags that differ from person 1, the rest 0."""
    lines = [",".join(["filename", *FLAG_COLUMNS])]
    for name, flags in rows:
        values = {"person": "1"} | flags
        lines.append(",".join([name, *(values.get(column, "0") for column in FLAG_COLUMNS)]))
    return ("\n".join(lines) + "\n").encode()


LABELS = flag_labels(("a.png", {}))
PREDICTIONS = b"filename,prediction\na.png,1\n"
SCORE = ("dataset", "score", "--labels", "labels.csv", "--predictions", "p.csv")
EVAL = ("eval", "--model", "wv_quality_k_2_c_3", "--dataset", "ds", "--results", "results")
BUILD = ("dataset", "build", "--annotations", "ann", "--images", "img", "--out", "out")
MAP = ("lpirc", "map", "--truth", "truth.csv", "--detections", "det.csv")
BOX_HEADER = b"ImageID,LabelName,XMin,XMax,YMin,YMax\n"


def png(pixels: np.ndarray, colour_type: int) -> bytes:
    """A PNG of `pixels` (uint8 or uint16, big-endian on disk) without PIL, so 16-bit colour can be written."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    height, width = pixels.shape[:2]
    big_endian = pixels.astype(pixels.dtype.newbyteorder(">"))
    raw = b"".join(b"\0" + big_endian[y].tobytes() for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, pixels.dtype.itemsize * 8, colour_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


EIGHT_BIT = np.random.default_rng(7).integers(0, 256, (6, 6, 3), dtype=np.uint8)
BUILD_FILES = {
    "ann/class-descriptions.csv": b"/m/01g317,Person\n",
    "ann/bbox.csv": BOX_HEADER + b"a,/m/01g317,0.1,0.9,0.1,0.9\n",
    "img/a.png": png(EIGHT_BIT, 2),
}


def generated() -> list[Case]:
    """Every reader x every way a file can be no file or no text."""
    files = NOT_A_FILE | NOT_TEXT
    return [
        *every_bad_form("score-labels", SCORE, "labels.csv", files, {"p.csv": PREDICTIONS}),
        *every_bad_form("score-predictions", SCORE, "p.csv", files, {"labels.csv": LABELS}),
        *every_bad_form(
            "score-clean-labels",
            (*SCORE, "--clean-labels", "wv_test_cleaned.csv"),
            "wv_test_cleaned.csv",
            files,
            {"labels.csv": LABELS, "p.csv": PREDICTIONS},
        ),
        *every_bad_form("eval-labels", EVAL, "ds/labels.csv", files, {"ds/images/a.png": png(EIGHT_BIT, 2)}),
        *every_bad_form(
            "eval-published-labels", EVAL, "ds/wake_vision_test.csv", files, {"ds/images/a.png": png(EIGHT_BIT, 2)}
        ),
        *every_bad_form("eval-split-file", EVAL, "ds/SPLIT", files, {"ds/labels.csv": LABELS}),
        *every_bad_form("eval-stream-note", EVAL, "ds/streamed.json", files | NOT_JSON, {"ds/labels.csv": LABELS}),
        *every_bad_form("build-bbox", BUILD, "ann/bbox.csv", files, _without(BUILD_FILES, "ann/bbox.csv")),
        *every_bad_form(
            "build-class-descriptions",
            BUILD,
            "ann/class-descriptions.csv",
            files,
            _without(BUILD_FILES, "ann/class-descriptions.csv"),
        ),
        *every_bad_form("build-miap", BUILD, "ann/miap.csv", files, BUILD_FILES),
        *every_bad_form("build-image", BUILD, "img/a.png", NOT_A_FILE, _without(BUILD_FILES, "img/a.png")),
        *every_bad_form("map-truth", MAP, "truth.csv", files, {"det.csv": b"1,1,0.9,10,10,20,20\n"}),
        *every_bad_form("map-detections", MAP, "det.csv", files, {"truth.csv": b"1,1,1,10,10,20,20\n"}),
        *every_bad_form(
            "eval-shard", EVAL, "ds/a.tar.gz", NOT_A_FILE, {"ds/wake_vision_test.csv": b"filename,label\na.jpg,1\n"}
        ),
    ]


def _without(files: dict, name: str) -> dict:
    return {key: value for key, value in files.items() if key != name}


def escaping_rows() -> list[Case]:
    """A labels row naming a file outside its image folder, in each labels layout and through each command."""
    names = {
        "dotdot": "../../outside.png",
        "dotdot-inside-first": "sub/../../outside.png",
        "absolute": "/etc/passwd",
        "link-out": "link.png",
    }
    layouts = {
        "flags": lambda name: flag_labels((name, {})),
        "binary": lambda name: f"filename,label\n{name},1\n".encode(),
        "cleaned": lambda name: f"filename,original_label,clean_label\n{name},1,1\n".encode(),
    }
    cases = []
    for form, name in names.items():
        for layout, labels in layouts.items():
            files = {"labels.csv": labels(name), "p.csv": PREDICTIONS, "outside.png": png(EIGHT_BIT, 2)}
            if form == "link-out":
                files["images/link.png"] = _Link(b"../outside.png")
            words = ("labels.csv line 2", repr(name), "outside the image folder")
            cases.append(Case(f"escape-{form}-{layout}", SCORE, words, files))
        eval_files = {"ds/labels.csv": flag_labels((name, {})), "outside.png": png(EIGHT_BIT, 2)}
        if form == "link-out":
            eval_files["ds/images/link.png"] = _Link(b"../../outside.png")
        cases.append(
            Case(f"escape-{form}-eval", EVAL, ("ds/labels.csv line 2", "outside the image folder"), eval_files)
        )
    return cases


class _Link(bytes):
    """A symbolic link to make instead of a file (tests/hostile.py makes FIFOs, /dev/zero links and folders)."""


def unicode_digits() -> list[Case]:
    """A non-ASCII digit one in every numeric column read: it is no 1."""
    cases = []
    for script, one in NON_ASCII_ONES.items():
        for column in ("person", "far", "non-person_non-depiction"):
            labels = flag_labels(("a.png", {column: one}))
            words = ("labels.csv line 2", f"{column} is {one!r}", "ASCII digits")
            cases.append(
                Case(f"digit-{script}-flag-{column}", SCORE, words, {"labels.csv": labels, "p.csv": PREDICTIONS})
            )
        binary = f"filename,label\na.png,{one}\n".encode()
        cases.append(
            Case(
                f"digit-{script}-label",
                SCORE,
                ("labels.csv line 2", "label"),
                {"labels.csv": binary, "p.csv": PREDICTIONS},
            )
        )
        cleaned = f"filename,original_label,clean_label\na.png,1,{one}\n".encode()
        cases.append(
            Case(
                f"digit-{script}-clean-label",
                SCORE,
                ("labels.csv line 2", "clean_label"),
                {"labels.csv": cleaned, "p.csv": PREDICTIONS},
            )
        )
        prediction = f"filename,prediction\na.png,{one}\n".encode()
        cases.append(
            Case(
                f"digit-{script}-prediction",
                SCORE,
                ("p.csv line 2", "prediction"),
                {"labels.csv": LABELS, "p.csv": prediction},
            )
        )
        score = f"filename,prediction,score\na.png,1,0.{one}\n".encode()
        cases.append(
            Case(
                f"digit-{script}-score",
                SCORE,
                ("p.csv line 2", "score", "ASCII"),
                {"labels.csv": LABELS, "p.csv": score},
            )
        )
        for field, row in (("image", f"{one},1,0.9,10,10,20,20"), ("xmax", f"1,1,0.9,10,10,2{one},20")):
            files = {"truth.csv": b"1,1,1,10,10,20,20\n", "det.csv": row.encode() + b"\n"}
            cases.append(Case(f"digit-{script}-box-{field}", MAP, ("det.csv:1", "ASCII digits"), files))
        bbox = BOX_HEADER + f"a,/m/01g317,0.{one},0.9,0.1,0.9\n".encode()
        files = BUILD_FILES | {"ann/bbox.csv": bbox}
        cases.append(Case(f"digit-{script}-annotation", BUILD, ("ann/bbox.csv line 2", "XMin", "ASCII"), files))
    return cases


def cut_short_shard() -> bytes:
    """A .tar.gz holding a.jpg, cut in the middle of it (a download that stopped)."""
    archive = io.BytesIO()
    data = np.random.default_rng(3).integers(0, 256, 65536, dtype=np.uint8).tobytes()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        member = tarfile.TarInfo("a.jpg")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    return archive.getvalue()[: len(archive.getvalue()) // 2]


def huge_and_damaged() -> list[Case]:
    """Fields over the CSV limit, numbers beyond any image, shards that are no .tar.gz, 16-bit colour."""
    huge_labels = flag_labels((HUGE_FIELD, {}))
    cases = [
        Case(
            "huge-field-labels",
            SCORE,
            ("labels.csv", "is not valid CSV (line 2", "65,536 characters"),
            {"labels.csv": huge_labels, "p.csv": PREDICTIONS},
        ),
        Case(
            "huge-field-predictions",
            SCORE,
            ("p.csv", "is not valid CSV (line 2", "65,536 characters"),
            {"labels.csv": LABELS, "p.csv": f"filename,prediction\n{HUGE_FIELD},1\n".encode()},
        ),
        Case(
            "huge-field-annotations",
            BUILD,
            ("ann/bbox.csv", "is not valid CSV (line 2"),
            BUILD_FILES | {"ann/bbox.csv": BOX_HEADER + f"{HUGE_FIELD},/m/01g317,0.1,0.9,0.1,0.9\n".encode()},
        ),
        Case(
            "huge-field-class-descriptions",
            BUILD,
            ("ann/class-descriptions.csv", "is not valid CSV (line 1"),
            BUILD_FILES | {"ann/class-descriptions.csv": f"/m/01g317,{HUGE_FIELD}\n".encode()},
        ),
        Case(
            "huge-digits-flag",
            SCORE,
            ("labels.csv line 2", "person is"),
            {"labels.csv": flag_labels(("a.png", {"person": "9" * 5001})), "p.csv": PREDICTIONS},
        ),
        Case(
            "huge-digits-box-image",
            MAP,
            ("det.csv:1", "expected 7 numbers"),
            {"truth.csv": b"1,1,1,10,10,20,20\n", "det.csv": b"9" * 5001 + b",1,0.9,10,10,20,20\n"},
        ),
        Case(
            "eval-shard-empty",
            EVAL,
            ("ds/a.tar.gz", "is empty"),
            {"ds/wake_vision_test.csv": b"filename,label\na.jpg,1\n", "ds/a.tar.gz": b""},
        ),
        Case(
            "eval-shard-not-gzip",
            EVAL,
            ("ds/a.tar.gz", "not a readable .tar.gz"),
            {"ds/wake_vision_test.csv": b"filename,label\na.jpg,1\n", "ds/a.tar.gz": b"PK\x03\x04 a zip, not a tar.gz"},
        ),
        Case(
            "eval-shard-gzip-not-tar",
            EVAL,
            ("ds/a.tar.gz", "not a readable .tar.gz"),
            {
                "ds/wake_vision_test.csv": b"filename,label\na.jpg,1\n",
                "ds/a.tar.gz": gzip.compress(b"not a tar " * 100),
            },
        ),
        Case(
            "eval-shard-cut-short",
            EVAL,
            ("ds/a.tar.gz", "not a readable .tar.gz"),
            {"ds/wake_vision_test.csv": b"filename,label\na.jpg,1\n", "ds/a.tar.gz": cut_short_shard()},
        ),
        Case(
            "build-16-bit-colour-png",
            BUILD,
            ("img/a.png", "8 bits a channel"),
            BUILD_FILES | {"img/a.png": png(EIGHT_BIT.astype(np.uint16) * 257, 2)},
        ),
        Case(
            "build-16-bit-grey-alpha-png",
            BUILD,
            ("img/a.png", "8 bits a channel"),
            BUILD_FILES | {"img/a.png": png(EIGHT_BIT[..., :2].astype(np.uint16) * 257, 4)},
        ),
        Case(
            "eval-split-file-empty", EVAL, ("ds/SPLIT", "one split name"), {"ds/labels.csv": LABELS, "ds/SPLIT": b"\n"}
        ),
        Case(
            "score-clean-labels-fifo-in-list",
            (*SCORE, "--clean-labels", "c.csv"),
            ("c.csv", "is a FIFO"),
            {"labels.csv": LABELS, "p.csv": PREDICTIONS, "c.csv": FIFO},
        ),
    ]
    for value in ("1e308", "-1e308", "1000001", "-2e6", "1e7"):
        for file in ("truth", "det"):
            row = f"1,1,0.9,10,10,{value},20\n".encode()
            files = {"truth.csv": b"1,1,1,10,10,20,20\n", "det.csv": b"1,1,0.9,10,10,20,20\n", f"{file}.csv": row}
            words = (f"{file}.csv:1", "1,000,000 pixels")
            cases.append(Case(f"box-beyond-{file}-{value}", MAP, words, files))
    return cases


CASES = [*generated(), *escaping_rows(), *unicode_digits(), *huge_and_damaged()]


def _make_links(root, case: Case) -> Case:
    """Links are made here; tests/hostile.py's make_files writes the rest."""
    files = {}
    for name, content in case.files.items():
        if isinstance(content, _Link):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).symlink_to(content.decode())
        else:
            files[name] = content
    return Case(case.id, case.args, case.expected, files, case.code)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_input_is_refused_in_one_line(tmp_path, case):
    run_case(tmp_path, _make_links(tmp_path, case))


def test_the_case_ids_are_unique():
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("form", ["fifo", "folder", "dev-null-link"])
def test_dataset_build_never_replaces_a_labels_file_that_is_no_regular_file(tmp_path, form):
    """`dataset build --out` names a folder: a labels.csv in it that is a FIFO, a folder or a link to a device is
    refused before any image is labelled, and left as it was."""
    out = tmp_path / "out"
    out.mkdir()
    target = out / "labels.csv"
    if form == "fifo":
        os.mkfifo(target)
    elif form == "folder":
        target.mkdir()
    else:
        target.symlink_to("/dev/null")
    run_case(
        tmp_path, Case(f"build-out-{form}", BUILD, ("labels.csv", "only ever replaces regular files"), BUILD_FILES)
    )
    assert target.is_fifo() if form == "fifo" else target.is_dir() if form == "folder" else target.is_symlink()

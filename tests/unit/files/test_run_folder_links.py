"""A link planted inside a run folder (summary.json -> a file elsewhere) never makes harness replace, append to or
cut the file outside: run-folder writers pass follow_links=False to harness/files.py, so the link itself is
replaced; an --out elsewhere still follows its link (the file it names is what is written)."""

from pathlib import Path

import pytest

from harness import files
from harness.errors import UserError
from harness.results import journal
from harness.results.store import RunFolder

OUTSIDE = "root:x:0:0:root:/root:/bin/sh\n"


@pytest.fixture
def outside(tmp_path) -> Path:
    path = tmp_path / "etc-passwd"
    path.write_text(OUTSIDE)
    return path


@pytest.fixture
def folder(tmp_path) -> Path:
    path = tmp_path / "results" / ".run.partial"
    path.mkdir(parents=True)
    return path


def _plant(link: Path, target: Path) -> Path:
    link.symlink_to(target)
    return link


def _replaced_not_followed(link: Path, outside: Path) -> None:
    assert outside.read_text() == OUTSIDE
    assert link.is_file() and not link.is_symlink()


def test_write_atomically_without_following_replaces_the_link_itself(folder, outside):
    link = _plant(folder / "summary.json", outside)
    files.write_text_atomically(link, "{}\n", "run file", follow_links=False)
    _replaced_not_followed(link, outside)
    assert link.read_text() == "{}\n"


def test_write_atomically_follows_a_link_by_default(tmp_path, outside):
    link = _plant(tmp_path / "report.html", outside)
    files.write_text_atomically(link, "<html/>\n")
    assert link.is_symlink() and outside.read_text() == "<html/>\n"


def test_a_link_to_a_device_is_replaced_not_written_through(folder):
    link = _plant(folder / "summary.json", Path("/dev/null"))
    files.write_text_atomically(link, "{}\n", "run file", follow_links=False)
    assert link.is_file() and not link.is_symlink()
    assert Path("/dev/null").is_char_device()


def test_a_folder_in_place_of_a_run_file_is_still_refused(folder):
    (folder / "summary.json").mkdir()
    with pytest.raises(UserError, match="is a folder; harness only ever replaces regular files"):
        files.write_text_atomically(folder / "summary.json", "{}\n", "run file", follow_links=False)


def test_a_link_planted_at_the_partial_name_is_not_written_through(folder, outside):
    target = folder / "summary.json"
    _plant(files.partial_path(target), outside)
    files.write_text_atomically(target, "{}\n", "run file", follow_links=False)
    assert outside.read_text() == OUTSIDE
    assert target.read_text() == "{}\n"


@pytest.mark.parametrize("name", ["summary.json", "manifest.json"])
def test_run_folder_json_replaces_a_planted_link(folder, outside, name):
    link = _plant(folder / name, outside)
    RunFolder(folder).write_json(name, {"accuracy": 0.5})
    _replaced_not_followed(link, outside)


def test_run_folder_table_replaces_a_planted_link(folder, outside):
    link = _plant(folder / "samples.parquet", outside)
    RunFolder(folder).write_table("samples.parquet", {"index": [0, 1]})
    _replaced_not_followed(link, outside)


@pytest.mark.parametrize("save", [journal.save_request, journal.save_origin])
def test_request_and_origin_replace_a_planted_link(folder, outside, save):
    name = journal.REQUEST if save is journal.save_request else journal.ORIGIN
    link = _plant(folder / name, outside)
    save(folder, {"model": "m"})
    _replaced_not_followed(link, outside)


def test_the_journal_is_never_appended_through_a_link(folder, outside):
    _plant(folder / journal.JOURNAL, outside)
    log = journal.Journal(folder)
    log._lines = 0  # nothing loaded: the link is never read, only opened for appending
    with pytest.raises(UserError, match="is a link; harness does not append to a file a link names"):
        log.append({"index": 0})
    log.close()
    assert outside.read_text() == OUTSIDE


def test_a_torn_journal_behind_a_link_is_refused_not_cut(folder, tmp_path):
    torn = tmp_path / "elsewhere.jsonl"
    torn.write_text('{"ind')  # a first entry torn by a kill
    _plant(folder / journal.JOURNAL, torn)
    with pytest.raises(UserError, match="is a link; harness does not cut a file a link names"):
        journal.Journal(folder).load()
    assert torn.read_text() == '{"ind'


def test_stream_detections_and_referee_boxes_replace_a_planted_link(folder, outside):
    from harness.eval.detection import Box, write_boxes
    from harness.streaming.detections import write_detections

    detections = _plant(folder / "detections_device.csv", outside)
    write_detections(detections, [], follow_links=False)
    _replaced_not_followed(detections, outside)
    boxes = _plant(folder / "results.csv", outside)
    write_boxes(boxes, [Box(1, 1, 0.5, 0, 0, 1, 1)])
    _replaced_not_followed(boxes, outside)

"""`harness runs list` shows the name of a folder it cannot read as a run; harness did not make that name, so
whatever a terminal would act on in it (ESC, a newline, a right-to-left override) is shown escaped."""

import pytest

from harness.cli import main


@pytest.mark.parametrize("hostile", ["bad\x1b[31mred", "two\nlines", "rtl\u202eexe.txt"])
def test_a_damaged_folder_name_is_shown_escaped(tmp_path, capsys, hostile):
    results = tmp_path / "results"
    (results / hostile).mkdir(parents=True)
    (results / hostile / "manifest.json").write_text("{")
    assert main(["runs", "list", "--results", str(results)]) == 0
    shown = capsys.readouterr().out
    escaped = hostile.encode("unicode_escape").decode("ascii")
    assert escaped in shown and hostile not in shown, shown

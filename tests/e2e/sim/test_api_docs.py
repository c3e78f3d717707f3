"""docs/api.md is a notebook that runs: its ```python cells, in order in one namespace against the virtual
board, print what the ```text block after each says (`...` stands for what differs between runs)."""

import contextlib
import doctest
import io
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PAGE = REPO / "docs" / "api.md"
CELL = re.compile(r"```python\n(.*?)```\n\n```text\n(.*?)```", re.DOTALL)


def cells() -> list[tuple[str, str]]:
    return CELL.findall(PAGE.read_text())


def test_the_page_has_cells_with_outputs():
    found = cells()
    assert len(found) >= 5 and all(code.strip() and shown.strip() for code, shown in found)
    assert PAGE.read_text().count("```python") == len(found)  # every code cell shows its output


def test_the_cells_print_what_the_page_shows(tmp_path, monkeypatch, vww_model):
    pytest.importorskip("pandas", reason="the page's DataFrame cell needs pandas: pip install 'harness[lab]'")
    monkeypatch.chdir(tmp_path)  # the page writes its runs to ./results
    namespace: dict = {}
    checker = doctest.OutputChecker()
    for index, (code, shown) in enumerate(cells(), 1):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, f"{PAGE.name} cell {index}", "exec"), namespace)
        assert checker.check_output(shown, printed.getvalue(), doctest.ELLIPSIS), (
            f"cell {index} printed:\n{printed.getvalue()}\nthe page shows:\n{shown}"
        )

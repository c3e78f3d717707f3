"""Hostile inputs as data: a case is a command, the files it is given and the words of its one-line refusal.

`Case` and `run_case` are shared by every corpus file (tests/e2e/sim/test_bad_input_corpus.py and
tests/e2e/sim/hostile/). `every_bad_form` generates, for one reader reached through one command, a case per
way a file can be hostile: a FIFO, a link to /dev/zero, a folder, non-UTF-8 bytes, UTF-16, nesting 10,000 deep,
a 5001-digit number, NaN. Each case checks the exit code (2 unless it says another), one line on stderr
holding every expected word, no traceback, no hang (a timeout) and no file changed in the working folder beyond
those the case made (a FIFO and a device stay what they were).
"""

import os
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.cli import exits
from tests.conftest import assert_refused_in_one_line
from tests.forked_cli import run_harness_command


class Special:
    """A file that is not a regular file, made by `make_files`."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


FIFO = Special("FIFO")  # a named pipe: reading it blocks forever unless refused first
DEV_ZERO = Special("DEV_ZERO")  # a link to /dev/zero: endless bytes
FOLDER = Special("FOLDER")  # a folder where a file is expected


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    expected: tuple[str, ...]
    files: dict[str, object] = field(default_factory=dict)
    code: int = exits.USAGE


def make_files(root: Path, files: dict[str, object]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is FIFO:
            os.mkfifo(path)
        elif content is DEV_ZERO:
            path.symlink_to("/dev/zero")
        elif content is FOLDER:
            path.mkdir()
        else:
            path.write_bytes(content)


def tree(root: Path) -> dict[str, tuple]:
    """Every path under root with its type, size and modification time: what a refused command must leave."""
    found = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        sized = stat.S_ISREG(info.st_mode)
        # A folder's own mtime is left out: its entries are compared one by one (a lock file made and removed
        # again by a refused command changes the folder's mtime, and nothing in it).
        mtime = 0 if stat.S_ISDIR(info.st_mode) else info.st_mtime_ns
        found[str(path.relative_to(root))] = (stat.S_IFMT(info.st_mode), info.st_size if sized else 0, mtime)
    return found


def run_harness(cwd: Path, *args: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m harness *args` as a process of its own, forked from a warm interpreter (tests/forked_cli.py)."""
    return run_harness_command(list(args), cwd, {**os.environ, **(env or {})}, timeout)


def run_case(root: Path, case: Case, env: dict | None = None) -> None:
    make_files(root, case.files)
    before = tree(root)
    done = run_harness(root, *case.args, env=env)
    assert_refused_in_one_line(done, *case.expected, code=case.code)
    assert tree(root) == before, "the refused command changed or left files behind"


# The forms a hostile file takes, each with the words its refusal must hold. `{name}` is the file's name.
NOT_A_FILE = {
    "fifo": (FIFO, ("{name}", "is a FIFO")),
    "dev-zero": (DEV_ZERO, ("{name}", "character device")),
    "folder": (FOLDER, ("{name}", "folder")),
}
NOT_TEXT = {
    "not-utf8": (b"\xff\xfe\xfa not text \x80\n", ("{name}", "UTF-8")),
    "latin1": ("caf\u00e9,na\u00efve\n".encode("latin-1"), ("{name}", "not UTF-8", "byte 0x")),
    "utf16": ("a,b\n".encode("utf-16"), ("{name}", "UTF-16", "save it as UTF-8")),
}
NOT_JSON = {
    "deep-json": (b"[" * 10000 + b"]" * 10000, ("{name}", "deep")),
    "huge-int-json": (b'{"a": ' + b"9" * 5001 + b"}", ("{name}",)),
    "nan-json": (b'{"a": NaN}', ("{name}", "field 'a' is nan, not a finite number")),
    "list-json": (b"[1, 2, 3]", ("{name}",)),
}
NOT_TOML = {
    "deep-toml": (b"a = " + b"[" * 10000 + b"]" * 10000 + b"\n", ("{name}", "deep")),
    "huge-int-toml": (b"a = " + b"9" * 5001 + b"\n", ("{name}",)),
    "nan-toml": (b"a = nan\n", ("{name}",)),
}


def every_bad_form(
    reader: str,
    args: tuple[str, ...],
    name: str,
    forms: dict[str, tuple[object, tuple[str, ...]]],
    other_files: dict[str, object] | None = None,
    code: int = exits.USAGE,
) -> Iterator[Case]:
    """A case per form for the file `name`, given to the command `args` (which names it)."""
    for form, (content, words) in forms.items():
        expected = tuple(word.format(name=name) for word in words)
        yield Case(f"{reader}-{form}", args, expected, {**(other_files or {}), name: content}, code)

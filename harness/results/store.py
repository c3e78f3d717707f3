"""Run folders: results/<run-id>/ appears whole or not at all, always directly inside --results, and is
written by one process at a time.

A run folder's name is made only from validated ids (harness/names.py: the model's and the board's, and a
run id given back to `--resume`), and its resolved path must lie directly in the resolved results folder, so
no id, link or `..` puts a run anywhere else. While a process writes a run folder (an eval, a resume) it holds
the folder's lock (harness/locks.py, `hold_run`): a second writer is refused naming the holder's pid and host.
"""

import errno
import json
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from harness import locks
from harness.errors import UserError, setting
from harness.files import what_it_is, write_atomically, write_text_atomically
from harness.names import ID_PATTERN, check_id, check_run_id


def shown_path(text: str) -> str:
    """A path as it can be printed: bytes that are not UTF-8 (kept by Python as surrogates) as \\x escapes."""
    return os.fsencode(text).decode("utf-8", "backslashreplace")


def new_run_id(model: str, board: str) -> str:
    check_id(model, "model id")
    check_id(board, "board id")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return check_run_id(f"{stamp}-{model}-{board}-{secrets.token_hex(2)}")


def id_part(name: str) -> str:
    """A name that is not an id (a folder's name) made into one, for a run id: other characters become '_'."""
    part = re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip("_.-")[:64] or "unnamed"
    return part if ID_PATTERN.fullmatch(part) else "unnamed"


def results_text(results: Path | str) -> Path:
    """--results as given, for reading or writing: a non-empty, UTF-8 path. Every command and API function taking
    --results checks the raw value here before wrapping it in a Path (Path('') would be the working folder)."""
    text = str(results)
    if not text.strip():
        raise UserError(f"{setting('results')} is empty; name the folder runs are written to (e.g. results)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        byte = os.fsencode(text[exc.start])[0]
        raise UserError(
            f"{setting('results')} {shown_path(text)} is not UTF-8 text (byte 0x{byte:02x}); "
            "name a folder whose name is UTF-8"
        ) from None
    return Path(results)


def results_root(results: Path | str) -> Path:
    """--results to write runs in, checked before any work: results_text, naming a folder or where one can be
    made (not a file, a FIFO or a device)."""
    text = str(results_text(results))
    mode = _mode(results)
    if mode is not None and not stat.S_ISDIR(mode):
        raise UserError(
            f"cannot create runs in {shown_path(text)} ({os.strerror(errno.ENOTDIR)}): it is {what_it_is(mode)}, "
            f"not a folder; pass a writable {setting('results')}"
        )
    return Path(results)


def _mode(path: Path | str) -> int | None:
    """The mode of what path names, through links (None: nothing there yet, or nothing that can be looked at)."""
    try:
        return os.stat(path).st_mode
    except OSError:
        return None


def run_path(root: Path, name: str) -> Path:
    """root/name, refused unless it resolves to an entry directly inside the resolved root (no link elsewhere)."""
    path = root / name
    if Path(os.path.realpath(path)).parent != Path(os.path.realpath(root)):
        raise UserError(
            f"run folder {shown_path(str(path))} does not lie in results folder {shown_path(str(root))} "
            "(a link or a '..' leads elsewhere); remove it or pass another --results"
        )
    return path


@contextmanager
def hold_run(folder: Path) -> Iterator[None]:
    """Hold a run folder (or its partial folder) for writing; a second writer is refused naming pid and host."""
    try:
        with locks.held(folder, "run folder"):
            yield
    except OSError as exc:
        if exc.filename is None or Path(exc.filename).name != locks.LOCK_NAME:
            raise
        raise UserError(
            f"cannot lock run folder {folder} ({exc.strerror}); it must be writable while the run is written"
        ) from None


def check_not_held(folder: Path) -> None:
    """Refuse at once, before any work, a run folder another process is writing."""
    holder = locks.is_held(folder)
    if holder is not None:
        raise UserError(
            f"run folder {folder} is being written by {holder}; wait for it to finish (or stop it), then try again"
        )


class RunFolder:
    def __init__(self, path: Path, made: tuple[Path, ...] = ()):
        self.path = path
        self._made = made  # folders above it this run created, innermost first

    def discard(self) -> None:
        """A run that never got going leaves nothing: its folder, and the results folders made for it."""
        shutil.rmtree(self.path, ignore_errors=True)
        _remove_made(self._made)

    def write_json(self, name: str, data: dict) -> None:
        text = json.dumps(data, indent=2, sort_keys=False) + "\n"
        with naming_the_file(self.path / name):
            write_text_atomically(self.path / name, text, "run file", follow_links=False)

    def write_table(self, name: str, columns: dict[str, list], schema: pa.Schema | None = None) -> None:
        table = pa.table(columns, schema=schema)
        with naming_the_file(self.path / name):
            write_atomically(
                self.path / name, lambda partial: pq.write_table(table, partial), "run file", follow_links=False
            )


@contextmanager
def naming_the_file(path: Path) -> Iterator[None]:
    """A failed write names the file it was writing: a full disk reports itself on write, with no file name, and
    an atomic write (harness/files.py) fails on the partial file beside it."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None and Path(exc.filename).parent != path.parent:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def _remove_made(made: tuple[Path, ...]) -> None:
    """The folders a run made above its own, innermost first, each only while empty."""
    for folder in made:
        try:
            folder.rmdir()
        except OSError:
            break


def partial_path(root: Path, run_id: str) -> Path:
    return run_path(root, f".{check_run_id(run_id)}.partial")


def _cannot_create(run_id: str, root: Path, exc: OSError) -> UserError:
    return UserError(f"cannot create run {run_id} in {root} ({exc.strerror}); pass a writable {setting('results')}")


def open_partial(root: Path, run_id: str, resume: bool) -> RunFolder:
    """The hidden folder a run fills before it is complete; a resumed run finds its own again."""
    root = results_root(root)
    partial = partial_path(root, run_id)
    if resume:
        if not partial.is_dir():
            done = " (it finished already)" if (root / run_id).is_dir() else ""
            raise UserError(f"no unfinished run {run_id} in {root}{done}; `harness runs` lists the finished ones")
        return RunFolder(partial)
    made = tuple(folder for folder in (root, *root.parents) if not folder.exists())
    try:
        partial.mkdir(parents=True)
    except OSError as exc:
        _remove_made(made)
        raise _cannot_create(run_id, root, exc) from exc
    return RunFolder(partial, made)


def publish(root: Path, run_id: str) -> Path:
    """The partial folder becomes the run folder, in one rename."""
    final = run_path(root, check_run_id(run_id))
    partial = partial_path(root, run_id)
    (partial / locks.LOCK_NAME).unlink(missing_ok=True)  # held until its writer lets go; no run keeps one
    os.rename(partial, final)
    return final


def resume_target(results: Path, run: str) -> tuple[Path, str]:
    """`--resume RUN`: a run id under --results (or a brief name of it: harness/results/run_refs.py), or the
    path of its partial folder; the id checked."""
    from harness.results.runs import unfinished_name

    path = Path(run)
    if path.name.startswith(".") and path.name.endswith(".partial"):
        return results_root(path.parent), check_run_id(path.name[1 : -len(".partial")], setting("resume"))
    root = results_root(results)
    return root, check_run_id(unfinished_name(run, root) or run, setting("resume"))


@contextmanager
def run_folder(root: Path, run_id: str) -> Iterator[RunFolder]:
    """Write into a hidden partial folder, held; rename it into place only if the block succeeds."""
    root = results_root(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(
            f"cannot create results folder {root} ({exc.strerror}); pass a writable {setting('results')}"
        ) from exc
    partial = partial_path(root, run_id)
    final = run_path(root, run_id)
    try:
        partial.mkdir()
    except OSError as exc:
        raise _cannot_create(run_id, root, exc) from exc
    try:
        with hold_run(partial):
            yield RunFolder(partial)
            (partial / locks.LOCK_NAME).unlink(missing_ok=True)  # held until the block lets go; no run keeps one
            os.rename(partial, final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise

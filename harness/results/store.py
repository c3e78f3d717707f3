"""Run folders: results/<run-id>/ appears whole or not at all."""

import json
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from harness.errors import UserError, setting


def new_run_id(model: str, board: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{model}-{board}-{secrets.token_hex(2)}"


class RunFolder:
    def __init__(self, path: Path, made: tuple[Path, ...] = ()):
        self.path = path
        self._made = made  # folders above it this run created, innermost first

    def discard(self) -> None:
        """A run that never got going leaves nothing: its folder, and the results folders made for it."""
        shutil.rmtree(self.path, ignore_errors=True)
        for folder in self._made:
            try:
                folder.rmdir()  # only while empty
            except OSError:
                break

    def write_json(self, name: str, data: dict) -> None:
        (self.path / name).write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")

    def write_table(self, name: str, columns: dict[str, list], schema: pa.Schema | None = None) -> None:
        pq.write_table(pa.table(columns, schema=schema), self.path / name)


def partial_path(root: Path, run_id: str) -> Path:
    return root / f".{run_id}.partial"


def open_partial(root: Path, run_id: str, resume: bool) -> RunFolder:
    """The hidden folder a run fills before it is complete; a resumed run finds its own again."""
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
        raise UserError(
            f"cannot create run {run_id} in {root} ({exc.strerror}); pass a writable {setting('results')}"
        ) from exc
    return RunFolder(partial, made)


def publish(root: Path, run_id: str) -> Path:
    """The partial folder becomes the run folder, in one rename."""
    final = root / run_id
    os.rename(partial_path(root, run_id), final)
    return final


def resume_target(results: Path, run: str) -> tuple[Path, str]:
    """`--resume RUN`: a run id under --results, or the path of its partial folder."""
    path = Path(run)
    if path.name.startswith(".") and path.name.endswith(".partial"):
        return path.parent, path.name[1 : -len(".partial")]
    return results, run


@contextmanager
def run_folder(root: Path, run_id: str) -> Iterator[RunFolder]:
    """Write into a hidden partial folder; rename it into place only if the block succeeds."""
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(
            f"cannot create results folder {root} ({exc.strerror}); pass a writable {setting('results')}"
        ) from exc
    partial = partial_path(root, run_id)
    final = root / run_id
    try:
        partial.mkdir()
    except OSError as exc:
        raise UserError(
            f"cannot create run {run_id} in {root} ({exc.strerror}); pass a writable {setting('results')}"
        ) from exc
    try:
        yield RunFolder(partial)
        os.rename(partial, final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise

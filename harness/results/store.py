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

from harness.errors import UserError


def new_run_id(model: str, board: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{model}-{board}-{secrets.token_hex(2)}"


class RunFolder:
    def __init__(self, path: Path):
        self.path = path

    def write_json(self, name: str, data: dict) -> None:
        (self.path / name).write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")

    def write_table(self, name: str, columns: dict[str, list], schema: pa.Schema | None = None) -> None:
        pq.write_table(pa.table(columns, schema=schema), self.path / name)


@contextmanager
def run_folder(root: Path, run_id: str) -> Iterator[RunFolder]:
    """Write into a hidden partial folder; rename it into place only if the block succeeds."""
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create results folder {root} ({exc.strerror}); pass a writable --results") from exc
    partial = root / f".{run_id}.partial"
    final = root / run_id
    partial.mkdir()
    try:
        yield RunFolder(partial)
        os.rename(partial, final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise

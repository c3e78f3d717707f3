"""The eval journal: one JSON line per finished sample, appended as results arrive, in the run's partial
folder. A run killed at any point (kill -9 included) is resumed from it: `harness eval --resume RUN`."""

import json
import os
from pathlib import Path

from harness.errors import UserError

JOURNAL = "journal.jsonl"
REQUEST = "request.json"  # the command-line settings the run was started with


class Journal:
    def __init__(self, folder: Path):
        self.path = folder / JOURNAL
        self._fd: int | None = None

    def load(self) -> dict[int, dict]:
        """Entries by sample index. A last line cut short by a kill is ignored (and overwritten)."""
        entries: dict[int, dict] = {}
        if not self.path.exists():
            return entries
        raw = self.path.read_bytes()
        whole = raw[: raw.rfind(b"\n") + 1]
        if len(whole) != len(raw):
            with open(self.path, "r+b") as f:  # drop the torn tail so appends start on a fresh line
                f.truncate(len(whole))
        for line in whole.splitlines():
            entry = json.loads(line)
            if entry["index"] in entries:
                raise UserError(f"{self.path}: sample {entry['index']} appears twice; the journal is damaged")
            entries[entry["index"]] = entry
        return entries

    def append(self, entry: dict) -> None:
        """One line in a single write to an O_APPEND file: whole or, after a kill, cut and ignored."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(self._fd, (json.dumps(entry, separators=(",", ":")) + "\n").encode())

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def save_request(folder: Path, settings: dict) -> None:
    tmp = folder / (REQUEST + ".tmp")
    tmp.write_text(json.dumps(settings, indent=2) + "\n")
    os.replace(tmp, folder / REQUEST)


def load_request(folder: Path) -> dict:
    try:
        return json.loads((folder / REQUEST).read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{folder} has no readable {REQUEST}; it is not a resumable run") from exc

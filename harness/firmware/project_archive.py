"""A generated project as one .zip a colleague can build: every file with its sha256 in manifest.json.

The archive is deterministic (entries sorted, fixed timestamps and modes), so one project always packs to the
same bytes, and it is written atomically: a reader never sees half a zip.
"""

import hashlib
import json
import zipfile
from pathlib import Path

from harness import reading
from harness.files import write_atomically

MANIFEST = "manifest.json"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry


def project_files(project: Path) -> dict[str, bytes]:
    """Every file of the project by its path inside it (POSIX), build outputs (.pio/) left out."""
    paths = sorted(p for p in project.rglob("*") if p.is_file() and ".pio" not in p.relative_to(project).parts)
    return {p.relative_to(project).as_posix(): reading.read_bytes(p, reading.PROJECT_FILE) for p in paths}


def manifest(files: dict[str, bytes]) -> dict:
    return {"files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())}}


def archive_project(project: Path) -> Path:
    """PROJECT.zip beside the project: its files under one folder named like it, and manifest.json."""
    files = project_files(project)
    if MANIFEST in files:
        files.pop(MANIFEST)  # a manifest lists the project's files, never an older manifest
    entries = {**files, MANIFEST: (json.dumps(manifest(files), indent=2) + "\n").encode()}
    target = project.with_name(project.name + ".zip")

    def write(partial: Path) -> None:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for name in sorted(entries):
                info = zipfile.ZipInfo(f"{project.name}/{name}", date_time=_EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                archive.writestr(info, entries[name])

    write_atomically(target, write, "project archive")
    return target

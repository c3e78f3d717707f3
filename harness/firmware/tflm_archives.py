"""TFLM's archives (docs/tflm.md): each fetched once through harness/downloads.py from the archive cache,
HARNESS_TFLM_MIRROR or its upstream URL and kept only when the sha256 of its files matches its pin; then unpacked
and patched where TFLM's download scripts would leave it, so that create_tflm_tree.py downloads nothing itself."""

import hashlib
import os
import shutil
import stat
import subprocess
import zipfile
from pathlib import Path

from harness import console, downloads
from harness.errors import BuildError, UserError
from harness.firmware.tflm_pins import Archive, Recipe
from harness.paths import cache_dir

GENERATOR = "tensorflow/lite/micro/tools/project_generation/create_tflm_tree.py"
DOWNLOADS = "tensorflow/lite/micro/tools/make/downloads"
ARCHIVE_MAX_BYTES = 1 << 30  # the largest pinned archive is tens of MB
_FIX = (
    "pass a generated tree with --tflm PATH, or set HARNESS_TFLM_MIRROR to a folder or URL holding {file} "
    "(docs/tflm.md)"
)


def archives_dir() -> Path:
    return cache_dir() / "tflm-archives"


def _members(archive: zipfile.ZipFile) -> list[tuple[str, zipfile.ZipInfo]]:
    """(path without the archive's single top folder, member) for every file and symlink, sorted."""
    infos = [info for info in archive.infolist() if not info.is_dir()]
    tops = {info.filename.split("/", 1)[0] for info in archive.infolist()}
    strip = len(tops) == 1 and all("/" in info.filename for info in infos)
    members = []
    for info in infos:
        name = info.filename.split("/", 1)[1] if strip else info.filename
        if name.startswith("/") or ".." in name.split("/"):
            raise UserError(f"archive member {info.filename!r} points outside its folder; the archive is not safe")
        members.append((name, info))
    return sorted(members, key=lambda item: item[0])


def files_sha256(path: Path) -> str:
    """sha256 of an archive's files: for each file by path (top folder stripped), `path NUL sha256(bytes) LF`.
    GitHub's zip and `git archive` of the same commit differ in bytes but not here, so a mirror may hold either."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(path) as archive:
        for name, info in _members(archive):
            digest.update(f"{name}\0{hashlib.sha256(archive.read(info)).hexdigest()}\n".encode())
    return digest.hexdigest()


def _extract(path: Path, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path) as archive:
        for name, info in _members(archive):
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            data = archive.read(info)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                target.symlink_to(data.decode())
                continue
            target.write_bytes(data)
            if mode & 0o111:
                target.chmod(0o755)


def _mirror_source(archive: Archive) -> str:
    mirror = os.environ.get("HARNESS_TFLM_MIRROR")
    if not mirror:
        return archive.url
    if "://" in mirror:
        return mirror.rstrip("/") + "/" + archive.file
    return str(Path(mirror).expanduser() / archive.file)


def cached_archive(archive: Archive) -> Path:
    return archives_dir() / f"{archive.sha256[:16]}-{archive.file}"


def fetch_archive(archive: Archive) -> Path:
    """The archive, verified, from the archive cache, else from HARNESS_TFLM_MIRROR or its upstream URL."""
    cached = cached_archive(archive)
    if cached.is_file():
        return cached
    source = _mirror_source(archive)
    console.notice(f"harness: downloading {archive.name} {archive.version} from {source}")

    def verify(partial: Path) -> None:
        try:
            got = files_sha256(partial)
        except zipfile.BadZipFile as exc:
            raise UserError(
                f"{archive.name} from {source} is not a zip archive ({exc}); " + _FIX.format(file=archive.file)
            ) from exc
        if got != archive.sha256:
            raise UserError(
                f"{archive.name} from {source} has files sha256 {got}, harness pins {archive.sha256}: "
                f"it is not {archive.name} {archive.version}; fix the mirror or the download (docs/tflm.md)"
            )

    fix = _FIX.format(file=archive.file)
    pin = downloads.Pinned(head=f"could not fetch {source}", fix=fix, max_bytes=ARCHIVE_MAX_BYTES, verify=verify)
    return downloads.download(source, cached, pin)


# --- placing --------------------------------------------------------------------------------------------------


def _patch(folder: Path, patch: Path, what: str, log) -> None:
    """As TFLM's download_and_extract.sh: `patch -p1 -d FOLDER < PATCH` (git apply where patch is absent)."""
    command = (
        ["patch", "-p1", "--batch", "--forward", "-d", str(folder), "-i", str(patch)]
        if shutil.which("patch")
        else ["git", "apply", "-p1", "--ignore-space-change", "--ignore-whitespace", str(patch)]
    )
    done = subprocess.run(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT, timeout=120)
    if done.returncode != 0:
        raise BuildError(f"TFLM's patch {patch.name} does not apply to {what}; log: {log.name}")


def place(recipe: Recipe, archives: dict[str, Path], src: Path, log) -> Path:
    """tflite-micro in src/, and its downloads in tools/make/downloads/ as its scripts leave them."""
    _extract(archives["tflite-micro"], src)
    if not (src / GENERATOR).is_file():
        raise UserError(f"the tflite-micro archive has no {GENERATOR}; check HARNESS_TFLM_PINS (docs/tflm.md)")
    downloads = src / DOWNLOADS
    downloads.mkdir(parents=True, exist_ok=True)
    for archive in recipe.third_party:
        folder = downloads / archive.dest
        _extract(archives[archive.name], folder)
        for build_file in [p for p in folder.rglob("*BUILD") if p.is_file()]:  # as download_and_extract.sh
            build_file.unlink()
        if archive.patch:
            _patch(folder, src / archive.patch, f"{archive.name} {archive.version}", log)
    for name in recipe.pins.placeholders:
        (downloads / name).mkdir(parents=True, exist_ok=True)
        (downloads / name / "HARNESS_PLACEHOLDER").write_text(
            f"harness: {name} is cloned by TFLM's Makefile but no generated tree uses it (docs/tflm.md)\n"
        )
    return downloads

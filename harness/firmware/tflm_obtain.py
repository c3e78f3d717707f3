"""TFLM obtained by harness (docs/tflm.md): tflite-micro at a pinned commit and the third-party archives its
Makefile names, each pinned by URL and the sha256 of its files; placed in tools/make/downloads/ and patched the
way TFLM's download scripts do, so that upstream's create_tflm_tree.py downloads nothing itself; run for a
board's [tflm] recipe, with a time bound. Trees are cached by recipe under cache_dir()/tflm-trees/<key>/,
written through a .partial folder renamed at the end: the cache never holds half a tree or an unverified
archive."""

import contextlib
import hashlib
import http.client
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from harness import console, reading
from harness.errors import BuildError, UserError, setting
from harness.paths import cache_dir

PINS_FILE = Path(__file__).with_name("tflm_pins.toml")
RECIPE_FORMAT = 1  # bump when what a key stands for changes
GENERATOR = "tensorflow/lite/micro/tools/project_generation/create_tflm_tree.py"
DOWNLOADS = "tensorflow/lite/micro/tools/make/downloads"
NETWORK_TIMEOUT_SECONDS = 60  # each connect and read
DOWNLOAD_DEADLINE_SECONDS = 1800  # one archive, start to end
GENERATE_TIMEOUT_SECONDS = 1200
# The generator runs with every proxy pointed at a closed port: anything it tried to fetch fails at once.
_NO_NETWORK = "http://127.0.0.1:9"
_FIX = (
    "pass a generated tree with --tflm PATH, or set HARNESS_TFLM_MIRROR to a folder or URL holding {file} "
    "(docs/tflm.md)"
)


def _say(text: str) -> None:
    console.notice(text)


def trees_dir() -> Path:
    return cache_dir() / "tflm-trees"


def archives_dir() -> Path:
    return cache_dir() / "tflm-archives"


def logs_dir() -> Path:
    return cache_dir() / "tflm-logs"


@dataclass(frozen=True)
class Archive:
    name: str
    version: str
    url: str  # upstream
    file: str  # its name in a mirror and in the archive cache
    sha256: str  # of its files: see files_sha256
    dest: str = ""  # under tools/make/downloads/ ("" for tflite-micro itself)
    patch: str = ""  # TFLM's patch for it, relative to the tflite-micro root
    only_for: tuple[str, ...] = ()  # needed only with one of these Makefile options (none: always)

    def needed(self, options: list[str]) -> bool:
        return not self.only_for or any(option in options for option in self.only_for)


@dataclass(frozen=True)
class Pins:
    commit: str
    tflite_micro: Archive
    third_party: tuple[Archive, ...]
    placeholders: tuple[str, ...]  # folders the Makefile clones that no tree uses
    toolchain_root: str
    source: Path


def _archive(entry: dict, where: Path) -> Archive:
    try:
        return Archive(
            name=entry["name"],
            version=str(entry["version"]),
            url=entry["url"],
            file=entry["file"],
            sha256=entry["sha256"].lower(),
            dest=entry.get("dest", ""),
            patch=entry.get("patch", ""),
            only_for=tuple(entry.get("only_for", ())),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"TFLM pins {where}: an archive lacks {exc}; compare it with {PINS_FILE}") from exc


def load_pins() -> Pins:
    """harness's pins, or the file HARNESS_TFLM_PINS names (same layout: a lab pinning other versions, tests)."""
    path = Path(os.environ.get("HARNESS_TFLM_PINS") or PINS_FILE)
    data = reading.read_toml(path, reading.PINS)  # a FIFO, a device, non-UTF-8 or deep nesting: one line
    try:
        tflm = data["tflite_micro"]
        return Pins(
            commit=tflm["commit"],
            tflite_micro=_archive(tflm | {"name": "tflite-micro", "version": tflm["commit"][:8]}, path),
            third_party=tuple(_archive(entry, path) for entry in data.get("third_party", ())),
            placeholders=tuple(tflm.get("placeholders", ())),
            toolchain_root=tflm.get("toolchain_root", "/usr/bin/"),
            source=path,
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"TFLM pins {path} are unreadable ({exc}); compare them with {PINS_FILE}") from exc


@dataclass(frozen=True)
class Recipe:
    """What a tree is generated from: the pins and the Makefile options a board's [tflm] table names."""

    kernels: str  # OPTIMIZED_KERNEL_DIR, or "reference" for TFLM's reference kernels
    target: str  # TARGET ("" : the Makefile's default, the host)
    target_arch: str
    pins: Pins

    @property
    def options(self) -> list[str]:
        options = []
        if self.target:
            options.append(f"TARGET={self.target}")
        if self.target_arch:
            options.append(f"TARGET_ARCH={self.target_arch}")
        if self.kernels != "reference":
            options.append(f"OPTIMIZED_KERNEL_DIR={self.kernels}")
        if self.target:  # a cross target: the system's compiler, or the Makefile downloads Arm's toolchain
            options.append(f"TARGET_TOOLCHAIN_ROOT={self.pins.toolchain_root}")
        return options

    @property
    def makefile_options(self) -> str:
        return " ".join(self.options)

    @property
    def third_party(self) -> list[Archive]:
        return [archive for archive in self.pins.third_party if archive.needed(self.options)]

    @property
    def archives(self) -> list[Archive]:
        return [self.pins.tflite_micro, *self.third_party]

    def describe(self) -> dict:
        return {
            "format": RECIPE_FORMAT,
            "tflite_micro": {
                "commit": self.pins.commit,
                "url": self.pins.tflite_micro.url,
                "sha256": self.pins.tflite_micro.sha256,
            },
            "makefile_options": self.makefile_options,
            "third_party": [
                {"name": a.name, "version": a.version, "url": a.url, "sha256": a.sha256, "patch": a.patch}
                for a in self.third_party
            ],
            "placeholders": list(self.pins.placeholders),
        }

    @cached_property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.describe(), sort_keys=True).encode()).hexdigest()[:16]

    def summary(self) -> str:
        kernels = "reference kernels" if self.kernels == "reference" else f"{self.kernels} kernels"
        where = f"{self.target} {self.target_arch}".strip() or "host target"
        return f"tflite-micro {self.pins.commit[:8]}, {kernels}, {where}"


# TFLM from a registry package (board file [platformio] tflm) rather than a tree: the kernels it brings.
PACKAGED_KERNELS = {
    "lib_deps": "cmsis_nn (Arduino_TensorFlowLite library)",
    "idf_component": "esp-nn (esp-tflite-micro component)",
}


def tflm_source(board) -> str:
    """Where a board's firmware gets TFLM when no --tflm is given: "tree" (harness prepares one),
    "lib_deps" or "idf_component" (the board file's pinned package), or "none"."""
    return board.tflm_source if board.hal_dir is not None else "none"


def board_recipe(board, pins: Pins | None = None) -> Recipe | None:
    """The board's [tflm] recipe when harness prepares its tree; None when it gets TFLM elsewhere."""
    if tflm_source(board) != "tree":
        return None
    table = board.tflm
    if table is None:
        raise UserError(
            f"board {board.id} has no [tflm] recipe (kernels, target, target_arch) in {board.source_file}; "
            f"add one (docs/tflm.md) or pass {setting('tflm')} PATH"
        )
    return Recipe(table.kernels, table.target, table.target_arch, pins or load_pins())


def elsewhere(board) -> str:
    """One line: where a board that needs no harness tree gets TFLM."""
    source = tflm_source(board)
    if source == "idf_component":
        components = board.platformio.idf_components
        packages = ", ".join(f"{name} {version}" for name, version in components.items())
        return f"{board.id}: TFLM is the ESP-IDF component {packages}, {PACKAGED_KERNELS[source]}, via PlatformIO"
    if source == "lib_deps":
        packages = ", ".join(board.platformio.lib_deps)
        return f"{board.id}: TFLM is the PlatformIO library {packages}, {PACKAGED_KERNELS[source]}"
    return f"{board.id}: harness prepares no TFLM tree for a {board.kind} board"


# --- archives -------------------------------------------------------------------------------------------------


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


def _download(source: str, target: Path) -> None:
    if "://" not in source:
        shutil.copyfile(source, target)
        return
    deadline = time.monotonic() + DOWNLOAD_DEADLINE_SECONDS
    request = urllib.request.Request(source, headers={"User-Agent": "harness"})
    with urllib.request.urlopen(request, timeout=NETWORK_TIMEOUT_SECONDS) as response, open(target, "wb") as out:
        while chunk := response.read(1 << 20):
            out.write(chunk)
            if time.monotonic() > deadline:
                raise TimeoutError(f"not done after {DOWNLOAD_DEADLINE_SECONDS} s")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code}"
    if isinstance(exc, urllib.error.URLError):
        return str(getattr(exc.reason, "strerror", None) or exc.reason)
    if isinstance(exc, TimeoutError):
        return str(exc) or "timed out"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _cached_archive(archive: Archive) -> Path:
    return archives_dir() / f"{archive.sha256[:16]}-{archive.file}"


def fetch_archive(archive: Archive) -> Path:
    """The archive, verified, from the archive cache, else from HARNESS_TFLM_MIRROR or its upstream URL."""
    cached = _cached_archive(archive)
    if cached.is_file():
        return cached
    source = _mirror_source(archive)
    _say(f"harness: downloading {archive.name} {archive.version} from {source}")
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f".{cached.name}.{os.getpid()}.partial")
    try:
        try:
            _download(source, partial)
        except (OSError, ValueError, http.client.HTTPException) as exc:
            raise UserError(f"could not fetch {source} ({_reason(exc)}); " + _FIX.format(file=archive.file)) from exc
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
        partial.replace(cached)
    finally:
        partial.unlink(missing_ok=True)
    return cached


# --- generating -----------------------------------------------------------------------------------------------


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


def _place(recipe: Recipe, archives: dict[str, Path], src: Path, log) -> Path:
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


def _listing(folder: Path) -> list[str]:
    """What the download scripts would make: downloads/NAME and the folders in it."""
    return sorted(str(p.relative_to(folder)) for pattern in ("*", "*/*") for p in folder.glob(pattern))


def _generate_timeout() -> float:
    return float(os.environ.get("HARNESS_TFLM_GENERATE_TIMEOUT") or GENERATE_TIMEOUT_SECONDS)


def _generate(recipe: Recipe, src: Path, out: Path, log) -> None:
    command = [sys.executable, str(src / GENERATOR), str(out)]
    if recipe.makefile_options:
        command.append(f"--makefile_options={recipe.makefile_options}")
    env = os.environ | {name: _NO_NETWORK for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")}
    env |= {"GIT_ALLOW_PROTOCOL": "file", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
    env.pop("no_proxy", None)
    env.pop("NO_PROXY", None)
    timeout = _generate_timeout()
    log.write(f"$ {' '.join(command)}\n")
    log.flush()
    process = subprocess.Popen(command, cwd=src, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        if process.poll() is None or code is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if code is None:
        raise BuildError(f"create_tflm_tree.py did not finish within {timeout:.0f} s; log: {log.name}")
    if code != 0:
        raise BuildError(f"create_tflm_tree.py failed (exit {code}); log: {log.name}")


def _size(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def cached_tree(recipe: Recipe) -> Path | None:
    final = trees_dir() / recipe.key
    return final / "tree" if (final / "recipe.json").is_file() and (final / "tree").is_dir() else None


def prepare(recipe: Recipe, board_id: str) -> Path:
    """Fetch, place, generate: the tree's folder in the cache (already there: returned as it is)."""
    from harness.firmware.tflm_tree import TflmTree

    if tree := cached_tree(recipe):
        return tree
    start = time.monotonic()
    final = trees_dir() / recipe.key
    missing = [archive for archive in recipe.archives if not _cached_archive(archive).is_file()]
    _say(
        f"harness: fetching TFLM for {board_id}, recipe {recipe.key} ({recipe.summary()}): first time only, "
        f"{len(missing)} of {len(recipe.archives)} archives to download (under 40 MB in all), "
        "then create_tflm_tree.py (about a minute)"
    )
    partial = trees_dir() / f"{recipe.key}.{os.getpid()}.partial"
    logs_dir().mkdir(parents=True, exist_ok=True)
    log_path = logs_dir() / f"{recipe.key}.log"
    try:
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        archives = {archive.name: fetch_archive(archive) for archive in recipe.archives}
        with open(log_path, "w") as log:
            _say(f"harness: placing {len(recipe.third_party)} third-party sources in {DOWNLOADS}, patched as TFLM does")
            downloads = _place(recipe, archives, partial / "src", log)
            before = _listing(downloads)
            _say(
                f'harness: generating the tree: create_tflm_tree.py --makefile_options="{recipe.makefile_options}" '
                f"(at most {_generate_timeout():.0f} s; log {log_path})"
            )
            _generate(recipe, partial / "src", partial / "tree", log)
            if _listing(downloads) != before:
                raise BuildError(f"create_tflm_tree.py downloaded something itself (see {log_path}); report it")
        TflmTree(partial / "tree")  # a tree, not a checkout
        files, size = _size(partial / "tree")
        seconds = time.monotonic() - start
        record = recipe.describe() | {
            "key": recipe.key,
            "kernels": recipe.kernels,
            "target": recipe.target,
            "target_arch": recipe.target_arch,
            "prepared_for": board_id,
            "prepared_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "seconds": round(seconds, 1),
            "files": files,
            "bytes": size,
        }
        (partial / "recipe.json").write_text(json.dumps(record, indent=2) + "\n")
        shutil.rmtree(partial / "src")
        try:
            partial.rename(final)
        except OSError:
            if cached_tree(recipe) is None:  # not another harness that finished first
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    _say(
        f"harness: TFLM tree ready in {seconds:.0f} s: {final / 'tree'} ({files} files, {size / 1e6:.1f} MB); "
        "the first firmware build for a CPU compiles it (several minutes on two cores), later builds reuse it"
    )
    return final / "tree"


def board_tree(board):
    """The tree harness prepares for the board (cached, else fetched and generated now), or None when the
    board gets TFLM elsewhere (an ESP-IDF component, a pinned library) or builds no TFLM firmware."""
    from harness.firmware.tflm_tree import TflmTree

    recipe = board_recipe(board)
    return None if recipe is None else TflmTree(prepare(recipe, board.id))


# --- the cache ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CachedTree:
    key: str
    path: Path
    record: dict

    @property
    def tree(self) -> Path:
        return self.path / "tree"


def cached_trees() -> list[CachedTree]:
    folder = trees_dir()
    found = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.name.endswith(".partial") or not (path / "recipe.json").is_file():
            continue
        try:
            record = reading.read_json(path / "recipe.json", reading.CACHE_INDEX)
        except UserError:
            record = {}  # damaged: the tree is listed without its recipe
        if not isinstance(record, dict):
            record = {}
        found.append(CachedTree(path.name, path, record))
    return found


def leftovers() -> list[Path]:
    """.partial folders of a harness that was killed, and folders without a recipe."""
    folder = trees_dir()
    if not folder.is_dir():
        return []
    return [p for p in sorted(folder.iterdir()) if p.name.endswith(".partial") or not (p / "recipe.json").is_file()]


def remove(paths: list[Path]) -> None:
    for path in paths:
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink(missing_ok=True)

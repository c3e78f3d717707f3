"""TFLM trees harness prepares (docs/tflm.md): for a board's recipe, the pinned archives placed and patched
(tflm_archives.py), then upstream's create_tflm_tree.py run with a time bound and no network. Trees are cached
by recipe under cache_dir()/tflm-trees/<key>/, written through a .partial folder renamed at the end: the cache
never holds half a tree. Also the cache's listing and removal."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness import console, reading
from harness.errors import BuildError, UserError
from harness.firmware.tflm_archives import DOWNLOADS, GENERATOR, cached_archive, fetch_archive, place
from harness.firmware.tflm_pins import Recipe, board_recipe
from harness.paths import cache_dir

GENERATE_TIMEOUT_SECONDS = 1200
# The generator runs with every proxy pointed at a closed port: anything it tried to fetch fails at once.
_NO_NETWORK = "http://127.0.0.1:9"


def _say(text: str) -> None:
    console.notice(text)


def trees_dir() -> Path:
    return cache_dir() / "tflm-trees"


def logs_dir() -> Path:
    return cache_dir() / "tflm-logs"


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
    missing = [archive for archive in recipe.archives if not cached_archive(archive).is_file()]
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
            downloads = place(recipe, archives, partial / "src", log)
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

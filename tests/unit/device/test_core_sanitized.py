"""The device core's tests again, against a build with AddressSanitizer and UBSan."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

SANITIZERS = "-fsanitize=address,undefined"


def _runtime(name: str) -> str | None:
    found = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
    return found if os.path.isabs(found) else None


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the sanitizer variant")
def test_core_tests_pass_under_address_and_undefined_behaviour_sanitizers(tmp_path):
    asan, ubsan = _runtime("libasan.so"), _runtime("libubsan.so")
    if not (asan and ubsan):
        pytest.skip("gcc has no libasan/libubsan runtime here")
    library = tmp_path / "devicecore-sanitized.so"
    sources = [
        *sorted(str(p) for p in (REPO / "firmware" / "core").glob("*.c")),
        *sorted(str(p) for p in (REPO / "firmware" / "eembc").glob("*.c")),
        *sorted(str(p) for p in (REPO / "firmware" / "sim").glob("*.c")),
    ]
    subprocess.run(
        [
            "gcc",
            "-std=c99",
            "-g",
            "-O1",
            "-fno-omit-frame-pointer",
            SANITIZERS,
            "-fno-sanitize-recover=all",
            "-shared",
            "-fPIC",
            f"-I{REPO / 'firmware' / 'core'}",
            f"-I{REPO / 'firmware' / 'eembc'}",
            *sources,
            "-o",
            str(library),
        ],
        check=True,
    )
    env = os.environ | {
        "HARNESS_DEVICECORE_LIB": str(library),
        "LD_PRELOAD": f"{asan} {ubsan}",
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/unit/link/test_framing.py",
            "tests/unit/device/test_device_core.py",
            "tests/unit/link/test_eembc.py",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "passed" in done.stdout

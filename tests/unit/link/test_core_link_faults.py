"""Link faults the device core must survive without memory errors or running a request twice: the C
checks in tests/c/link_faults.c, built with AddressSanitizer and UBSan against firmware/core."""

import os
import shutil
import subprocess

import pytest

from tests.conftest import REPO
from tests.unit.device.test_core_sanitized import SANITIZERS, _runtime


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the sanitized checks")
def test_bench_profile_damaged_resends_and_baud_probation_under_sanitizers(tmp_path):
    if not (_runtime("libasan.so") and _runtime("libubsan.so")):
        pytest.skip("gcc has no libasan/libubsan runtime here")
    program = tmp_path / "link_faults"
    core = REPO / "firmware" / "core"
    subprocess.run(
        ["gcc", "-std=c99", "-g", "-O1", SANITIZERS, "-fno-sanitize-recover=all", f"-I{core}",
         *sorted(str(p) for p in core.glob("*.c")), str(REPO / "tests" / "c" / "link_faults.c"), "-o", str(program)],
        check=True,
    )  # fmt: skip
    done = subprocess.run(
        [str(program)], capture_output=True, text=True, timeout=60, env=os.environ | {"ASAN_OPTIONS": "detect_leaks=0"}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASS ") == 8, done.stdout

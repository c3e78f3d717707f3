"""scripts/exporter/ser2net, the wrapper docs/farm.md puts on a labgrid exporter's PATH: it adds `chardelay: false`
to the YAML options labgrid's exporter gives ser2net, and passes every other invocation through unchanged."""

import subprocess
import sys
from pathlib import Path

import pytest

WRAPPER = Path(__file__).resolve().parents[3] / "scripts" / "exporter" / "ser2net"
# Stands for the real ser2net: prints the arguments it was given, one a line.
PRINT_ARGS = "import sys; print('\\n'.join(sys.argv[1:]))"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell script")


def _run(tmp_path, *args: str) -> list[str]:
    fake = tmp_path / "ser2net"
    fake.write_text(f"#!{sys.executable}\n{PRINT_ARGS}\n")
    fake.chmod(0o755)
    done = subprocess.run([str(WRAPPER), *args], env={"SER2NET": str(fake)}, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_labgrids_yaml_options_gain_chardelay_off(tmp_path):
    labgrid_args = ["-d", "-n", "-Y", "connection: &con01#  accepter: telnet(rfc2217,mode=server),tcp,4000"]
    labgrid_args += ["-Y", "  options:", "-Y", "    max-connections: 10"]
    assert _run(tmp_path, *labgrid_args) == [*labgrid_args, "-Y", "    chardelay: false"]


def test_other_invocations_pass_unchanged(tmp_path):
    assert _run(tmp_path, "-v") == ["-v"]
    assert _run(tmp_path, "-n", "-C", "4000:telnet:0:/dev/ttyUSB0:115200") == [
        "-n",
        "-C",
        "4000:telnet:0:/dev/ttyUSB0:115200",
    ]

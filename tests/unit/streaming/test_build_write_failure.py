"""stream build into a folder it cannot write (issue #31): one line naming the stream, no traceback after it.

Root writes anywhere, so the failure is made by pointing the partial file into a folder that does not exist;
the subprocess shows what a user sees, including what Python prints from a destructor on the way out."""

import subprocess
import sys
import textwrap

import numpy as np

from harness.audio.clips import write_clip

SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import harness.files
    from harness.cli.app import main

    harness.files.partial_path = lambda target: Path("no-such-folder") / f".{target.name}.partial"
    sys.exit(main(["stream", "build", "--clips", "clips", "--out", "s.wav", "--count", "1", "--duration-ms", "3000"]))
    """
)


def test_a_stream_that_cannot_be_written_is_one_line(tmp_path):
    (tmp_path / "clips" / "yes").mkdir(parents=True)
    write_clip(tmp_path / "clips" / "yes" / "a.wav", np.full(16000, 1000), 16000)
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "harness: error: cannot write s.wav (No such file or directory); choose a folder you can write"
    ]
    assert not (tmp_path / "s.wav").exists() and not (tmp_path / "s.csv").exists()

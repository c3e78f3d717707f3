"""The process entry (`harness`, `python -m harness`) skips the interpreter's teardown once pyarrow is loaded, so
it must itself wait for the command's threads and flush its output."""

import subprocess
import sys
import textwrap


def _entry(tmp_path, body: str) -> subprocess.CompletedProcess:
    program = "\n".join(
        [
            "import sys, threading, time",
            "import pyarrow",
            "import harness.cli.app as app",
            "def main(argv=None):",
            textwrap.indent(textwrap.dedent(body).strip(), "    "),
            "app.main = main",
            "app.exit_process()",
        ]
    )
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=tmp_path, timeout=60)


def test_the_exit_status_is_mains_and_buffered_output_is_flushed(tmp_path):
    done = _entry(tmp_path, 'sys.stdout.write("no newline, still buffered"); return 3')
    assert (done.returncode, done.stdout) == (3, "no newline, still buffered")


def test_a_thread_the_command_left_running_finishes_before_the_process_ends(tmp_path):
    body = """
    def later():
        time.sleep(0.3)
        open("written", "w").write("done")
    threading.Thread(target=later).start()
    return 0
    """
    done = _entry(tmp_path, body)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "written").read_text() == "done"

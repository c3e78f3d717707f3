"""SIGTERM as a clean stop (harness/cli/signals.py): it raises KeyboardInterrupt where the command is, once;
the run's line and exit 143 are tests/e2e/sim/test_resume.py's."""

import os
import signal
import time

import pytest

from harness.cli.signals import sigterm_as_interrupt


def test_sigterm_interrupts_once_and_the_cleanup_is_let_finish():
    before = signal.getsignal(signal.SIGTERM)
    cleaned = False
    with sigterm_as_interrupt() as received:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs by here at the latest
        os.kill(os.getpid(), signal.SIGTERM)  # a second one while cleaning up: ignored
        cleaned = True
    assert cleaned and received == [signal.SIGTERM]
    assert signal.getsignal(signal.SIGTERM) is before

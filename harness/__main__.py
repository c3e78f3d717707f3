from harness.cli import exit_process

exit_process()

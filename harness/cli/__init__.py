"""The `harness` command line (harness/cli/app.py builds it; one module per area of commands)."""

from harness.cli.app import exit_process, main

__all__ = ["exit_process", "main"]

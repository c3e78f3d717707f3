"""The `harness` command line (harness/cli/app.py builds it; one module per area of commands)."""

from harness.cli.app import main

__all__ = ["main"]

"""`harness ARGV` in a fresh interpreter that then names the heavy packages it loaded: what the start-up and
light-command tests check (tests/unit/architecture). No wall clock: what is imported is what they are about."""

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys
from harness.cli.app import main
try:
    code = main(json.loads(sys.argv[1]))
except SystemExit as exc:
    code = exc.code
heavy = set(json.loads(sys.argv[2]))
print(json.dumps({"code": code, "heavy": sorted({m.split(".")[0] for m in sys.modules} & heavy)}))
"""


@dataclass(frozen=True)
class Probed:
    code: int | str | None  # the command's exit code
    heavy: list[str]  # the packages of `heavy` it loaded
    stderr: str


def probe(argv: list[str], heavy: tuple[str, ...], cwd: Path = REPO) -> Probed:
    """This checkout's harness first on the path, whatever is installed."""
    env = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(heavy)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip(), done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return Probed(found["code"], found["heavy"], done.stderr)

"""Releases labgrid places (and cancels reservations) that harness held when harness dies without doing so.

harness starts it in a session of its own with a pipe on its stdin (harness/device/labgrid_place.py) and
tells it, a line each, every place it is about to acquire and every reservation it made; the pipe closing
without harness's word that it released everything means harness died (SIGKILL, a crash).
The places are released only if the user named still holds them, so a place someone acquired since is
left alone."""

import argparse
import signal
import sys
import time

from harness.device.labgrid_place import RELEASED, release

RETRY_SECONDS = 60  # a coordinator briefly away


def main() -> int:
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--user", required=True, help="host/user, as the coordinator names harness")
    args = parser.parse_args()
    places, tokens = [], []
    for line in sys.stdin.buffer:  # until harness closes the pipe, or dies
        if line == RELEASED:
            return 0
        what, _, name = line.decode(errors="replace").strip().partition(" ")
        (places if what == "place" else tokens if what == "token" else []).append(name)
    deadline = time.monotonic() + RETRY_SECONDS
    while failed := release(places, args.user, tokens):
        if time.monotonic() > deadline:
            print(f"harness labgrid guard: {'; '.join(failed)}", file=sys.stderr)
            return 1
        time.sleep(2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

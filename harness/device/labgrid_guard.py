"""Releases labgrid places (and cancels reservations) that harness held when harness dies without doing so.

harness starts it in a session of its own with a pipe on its stdin (harness/device/labgrid_place.py); the
pipe closing without harness's word that it released everything means harness died (SIGKILL, a crash).
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
    parser.add_argument("--place", action="append", default=[])
    parser.add_argument("--token", action="append", default=[])
    args = parser.parse_args()
    said = sys.stdin.buffer.read()
    if said == RELEASED:
        return 0
    deadline = time.monotonic() + RETRY_SECONDS
    while failed := release(args.place, args.user, args.token):
        if time.monotonic() > deadline:
            print(f"harness labgrid guard: {'; '.join(failed)}", file=sys.stderr)
            return 1
        time.sleep(2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

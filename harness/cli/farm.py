"""`harness farm`: the labgrid farm's places, by hand."""

from harness.cli import exits
from harness.console import print_json


def cmd_farm_release(args) -> int:
    from harness.device.labgrid_place import release_by_hand

    holder = release_by_hand(args.place)
    if args.json:
        print_json({"place": args.place, "released": holder is not None, "acquired_by": holder})
    elif not args.quiet and holder:
        print(f"released labgrid place {args.place} (acquired by {holder})")
    elif not args.quiet:
        print(f"labgrid place {args.place} is not acquired: nothing to release")
    return exits.OK

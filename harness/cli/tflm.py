"""`harness tflm`: the TFLM trees harness prepares (list, prepare, remove, sources); docs/tflm.md.

The parser is built from this module for every command: what the handlers use is imported inside them."""

from harness.cli.args import BOARD, command, group
from harness.console import print_json, stdout_console
from harness.errors import UserError


def add_tflm_commands(commands) -> None:
    tflm = group(commands, "tflm", "the TFLM trees harness prepares for boards (docs/tflm.md)", "harness tflm list")
    command(tflm, "list", cmd_tflm_list, "cached trees: recipe, size, boards using it", "harness tflm list")
    prepare = command(
        tflm,
        "prepare",
        cmd_tflm_prepare,
        "fetch TFLM and generate a board's tree now (first time: a few minutes)",
        "harness tflm prepare --board nucleo_h743",
    )
    BOARD.add(prepare, required=True, purpose="its [tflm] recipe")
    remove = command(
        tflm,
        "remove",
        cmd_tflm_remove,
        "remove cached trees",
        ("harness tflm remove --board nucleo_h743", "harness tflm remove --all"),
    )
    remove.add_argument("keys", nargs="*", metavar="KEY", help="recipe keys (or prefixes) from `harness tflm list`")
    BOARD.add(remove, unset=True, purpose="the tree this board uses")
    remove.add_argument("--all", action="store_true", help="every tree, downloaded archive and leftover")
    command(
        tflm,
        "sources",
        cmd_tflm_sources,
        "the pinned archives: URL, mirror file name, sha256 (for a mirror)",
        "harness tflm sources --json",
    )


def _users() -> dict[str, list[str]]:
    """recipe key -> the boards whose [tflm] recipe it is."""
    from harness.boards import all_boards
    from harness.firmware.tflm_pins import board_recipe, load_pins

    pins = load_pins()
    users: dict[str, list[str]] = {}
    for board in all_boards().values():
        try:
            recipe = board_recipe(board, pins)
        except UserError:
            continue
        if recipe is not None:
            users.setdefault(recipe.key, []).append(board.id)
    return users


def cmd_tflm_list(args) -> int:
    from harness.boards import all_boards
    from harness.firmware.tflm_obtain import cached_trees, leftovers, trees_dir
    from harness.firmware.tflm_pins import board_recipe, elsewhere, load_pins

    users = _users()
    trees = cached_trees()
    pins = load_pins()
    boards = []
    for board in all_boards().values():
        try:
            recipe = board_recipe(board, pins)
        except UserError as exc:
            boards.append({"board": board.id, "source": "tree", "problem": exc.worded_for_cli()})
            continue
        if recipe is None:
            boards.append({"board": board.id, "source": "elsewhere", "text": elsewhere(board)})
        else:
            boards.append({"board": board.id, "source": "tree", "key": recipe.key, "recipe": recipe.summary()})
    if args.json:
        print_json(
            {
                "cache": str(trees_dir()),
                "trees": [
                    {"key": t.key, "path": str(t.tree), "boards": users.get(t.key, []), "recipe": t.record}
                    for t in trees
                ],
                "boards": boards,
                "leftovers": [str(p) for p in leftovers()],
            }
        )
        return 0
    console = stdout_console()
    cached = {t.key for t in trees}
    if not trees:
        console.print(f"no TFLM trees in {trees_dir()} (`harness tflm prepare --board B` makes one)", highlight=False)
    for t in trees:
        record = t.record
        what = (
            f"tflite-micro {record.get('tflite_micro', {}).get('commit', '?')[:8]}, "
            f"{record.get('makefile_options') or 'defaults (reference kernels)'}"
        )
        size = f"{record.get('files', '?')} files, {record.get('bytes', 0) / 1e6:.1f} MB"
        used = ", ".join(users.get(t.key, [])) or "no board (another pin set or recipe)"
        console.print(f"{t.key}  {what}; {size}; used by {used}", highlight=False)
        console.print(f"  {t.tree}", highlight=False)
    for entry in boards:
        if entry["source"] == "elsewhere":
            console.print(f"  {entry['text']}", highlight=False)
        elif "problem" in entry:
            console.print(f"  {entry['board']}: {entry['problem']}", highlight=False)
        elif entry["key"] not in cached:
            console.print(
                f"  {entry['board']}: tree {entry['key']} ({entry['recipe']}) not prepared yet; the first build "
                "that needs it prepares it, or `harness tflm prepare`",
                highlight=False,
            )
    for path in leftovers():
        console.print(f"  leftover {path} (an interrupted prepare): `harness tflm remove --all`", highlight=False)
    return 0


def cmd_tflm_prepare(args) -> int:
    from harness.boards import get_board
    from harness.firmware.tflm_obtain import cached_tree, prepare
    from harness.firmware.tflm_pins import board_recipe, elsewhere

    board = get_board(args.board)
    recipe = board_recipe(board)
    console = stdout_console()
    if recipe is None:
        if args.json:
            print_json({"board": board.id, "tree": None, "tflm": elsewhere(board)})
        else:
            console.print(f"{elsewhere(board)}; harness prepares no tree for it", highlight=False)
        return 0
    already = cached_tree(recipe) is not None
    tree = prepare(recipe, board.id)
    if args.json:
        print_json(
            {
                "board": board.id,
                "key": recipe.key,
                "tree": str(tree),
                "cached": already,
                "makefile_options": recipe.makefile_options,
            }
        )
    else:
        state = "already prepared" if already else "prepared"
        console.print(f"{board.id}: TFLM tree {recipe.key} {state} ({recipe.summary()}): {tree}", highlight=False)
    return 0


def cmd_tflm_remove(args) -> int:
    from harness.boards import get_board
    from harness.firmware.tflm_archives import archives_dir
    from harness.firmware.tflm_obtain import cached_trees, leftovers, logs_dir, remove
    from harness.firmware.tflm_pins import board_recipe

    trees = cached_trees()
    chosen = []
    if args.all:
        chosen = [t.path for t in trees] + leftovers() + [archives_dir(), logs_dir()]
    else:
        if not args.keys and not args.board:
            raise UserError("`harness tflm remove` needs KEY, --board BOARD or --all (keys: `harness tflm list`)")
        keys = list(args.keys)
        if args.board:
            recipe = board_recipe(get_board(args.board))
            if recipe is None:
                raise UserError(f"{args.board} uses no harness tree; nothing to remove")
            keys.append(recipe.key)
        for key in keys:
            matches = [t for t in trees if t.key.startswith(key)]
            if len(matches) != 1:
                known = ", ".join(t.key for t in trees) or "none"
                raise UserError(f"{key!r} names {len(matches)} cached trees; cached: {known}")
            chosen.append(matches[0].path)
    existing = [p for p in chosen if p.exists()]
    remove(existing)
    if args.json:
        print_json({"removed": [str(p) for p in existing]})
    else:
        console = stdout_console()
        for path in existing:
            console.print(f"removed {path}", highlight=False)
        if not existing:
            console.print("nothing to remove", highlight=False)
    return 0


def cmd_tflm_sources(args) -> int:
    from harness.firmware.tflm_pins import load_pins

    pins = load_pins()
    archives = [pins.tflite_micro, *pins.third_party]
    if args.json:
        print_json(
            {
                "pins": str(pins.source),
                "archives": [
                    {
                        "name": a.name,
                        "version": a.version,
                        "url": a.url,
                        "file": a.file,
                        "sha256": a.sha256,
                        "only_for": list(a.only_for),
                    }
                    for a in archives
                ],
                "placeholders": list(pins.placeholders),
            }
        )
        return 0
    for a in archives:
        when = f"  (only with {' or '.join(a.only_for)})" if a.only_for else ""
        print(f"{a.file}  {a.url}  files-sha256 {a.sha256}{when}")
    return 0

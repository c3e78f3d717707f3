"""Commands about models and data: models list|pull|inspect|convert, dataset list|build|subsets."""

import dataclasses
import sys
from pathlib import Path

from harness.console import percent, print_json, stdout_console
from harness.errors import UserError
from harness.model.cards import all_cards, load_card


def cmd_dataset_build(args) -> int:
    from harness.eval.dataset_build import build_dataset

    labels, count = build_dataset(Path(args.annotations), Path(args.images), Path(args.out))
    if args.json:
        print_json({"labels": str(labels), "images": count})
    else:
        print(f"{count} images labelled: {labels}")
    return 0


def cmd_inspect(args) -> int:
    from rich.markup import escape
    from rich.table import Table

    from harness.boards import all_boards, get_board
    from harness.model.inspect import inspect_model
    from harness.model.tflite_file import read_tflite

    target = Path(args.model)
    if args.model.lower().endswith((".h5", ".keras")) or (target / "saved_model.pb").is_file():
        raise UserError(
            f"{args.model} is a Keras model, not a model card or .tflite: convert it first with "
            "harness models convert --card CARD --model MODEL --out MODEL.tflite, then inspect the .tflite"
        )
    if target.is_dir() and target.suffix not in (".tflite", ".toml"):  # those say so as they are read
        raise UserError(f"{args.model} is a directory; pass a .tflite file or a model card (`harness models list`)")
    if args.model.endswith(".tflite") or (target.is_file() and target.suffix != ".toml"):
        model = read_tflite(target)
    else:
        model = read_tflite(_card_model(load_card(args.model)))
    boards = [get_board(args.board)] if args.board else ([] if args.no_fit else list(all_boards().values()))
    result = inspect_model(model, boards)
    if args.json:
        print_json(result.as_dict())
        return 0
    console = stdout_console()
    console.print(
        f"{result.model}: {result.flatbuffer_bytes:,} bytes, {result.input} -> {result.output}\n"
        f"  {result.parameters:,} parameters, {result.macs:,} MACs (conv and fully connected layers), "
        f"{len(result.layers)} operators: "
        + escape(", ".join(f"{n} {op}" for op, n in result.operators.items()))
        + "\n"
        f"  arena {result.arena_estimate:,} bytes ({result.arena_source})",
        highlight=False,
    )
    if args.layers:
        layers = Table(title="layers", title_justify="left")
        layers.add_column("#", justify="right", no_wrap=True)
        layers.add_column("operator", no_wrap=True)
        layers.add_column("output", justify="right", no_wrap=True)
        layers.add_column("MACs", justify="right", no_wrap=True)
        for layer in result.layers:
            # escaped: a shape like [1, 2] or a custom operator's name is text, not Rich markup
            layers.add_row(str(layer.index), escape(layer.operator), escape(str(layer.output_shape)), f"{layer.macs:,}")
        console.print(layers)
    if result.fits:
        console.print(_fit_table(result.fits))
    return 0


def _card_model(card) -> Path:
    """The .tflite a card's model runs as on a board: its own file, or a float model's int8 conversion."""
    from harness.eval.convert import converted_for_eval
    from harness.eval.dataset import load_dataset
    from harness.model.convert import is_float_model
    from harness.model.fetch import obtain_model
    from harness.samples import DEMO

    path = obtain_model(card)
    if is_float_model(path):  # what would run on a board is its int8 conversion
        path = converted_for_eval(path, card, load_dataset(DEMO)).path
    return path


def _fit_table(fits):
    """Board fit in 80 columns: what the model needs is the same on every board (harness/model/inspect.py), so
    it is said once under the table and each row holds what the board has."""
    from rich.console import Group
    from rich.table import Table

    table = Table(title="fit (flash: model + a 128 KiB code allowance; RAM: the arena)", title_justify="left")
    table.add_column("board", no_wrap=True)
    table.add_column("fits", no_wrap=True)
    needs = {(f.flash_needed, f.arena_needed) for f in fits}
    same = len(needs) == 1
    if not same:  # not so today; said per board should a board ever need more
        table.add_column("flash B\nneeded", justify="right", no_wrap=True)
    table.add_column("flash B\navailable", justify="right", no_wrap=True)
    if not same:
        table.add_column("arena B\nneeded", justify="right", no_wrap=True)
    table.add_column("arena B\navailable", justify="right", no_wrap=True)
    table.add_column("arena B\nmargin", justify="right", no_wrap=True)
    for fit in fits:
        flash = [f"{fit.flash_available:,}"] if same else [f"{fit.flash_needed:,}", f"{fit.flash_available:,}"]
        arena = [f"{fit.arena_available:,}"] if same else [f"{fit.arena_needed:,}", f"{fit.arena_available:,}"]
        margin = f"{fit.arena_available - fit.arena_needed:+,}"
        table.add_row(fit.board, "yes" if fit.fits else "NO", *flash, *arena, margin)
    if not same:
        return table
    flash_needed, arena_needed = needs.pop()
    return Group(
        table, f"on every board the model needs {flash_needed:,} B of flash and an arena of {arena_needed:,} B"
    )


def cmd_convert(args) -> int:
    from harness.model.convert import check_convertible
    from harness.model.fetch import obtain_model

    card = load_card(args.card)
    out = Path(args.out)
    check_convertible(Path(args.model) if args.model else None, card, out)  # before fetching or loading
    # after the checks: these bring the image pipeline (PIL), which a refused command line need not import
    from harness.eval.convert import convert
    from harness.eval.dataset import load_dataset
    from harness.eval.subsets import parse_subsets

    source = Path(args.model) if args.model else obtain_model(card)
    dataset = load_dataset(args.dataset)
    subsets = parse_subsets(args.subset)
    result = convert(source, card, dataset, subsets, args.samples, args.io, out, split_seed=args.seed)
    report = dataclasses.asdict(result) | {"out": str(result.out)}
    if args.reference:
        report["reference"] = agreement_with(result.out, load_card(args.reference), card, dataset)
    if args.json:
        print_json(report)
        return 0
    console = stdout_console()
    console.print(
        f"{result.out}: calibrated on {result.calibration_samples} samples {_per_class(result.calibration_classes)}; "
        f"on {result.held_out} held-out samples {_per_class(result.held_out_classes)} "
        f"int8 agrees with float on {percent(result.agreement)} % (accuracy float {percent(result.float_accuracy)} %, "
        f"int8 {percent(result.int8_accuracy)} %); split seed {result.split_seed} (--seed)",
        highlight=False,
    )
    if args.reference:
        ref = report["reference"]
        console.print(
            f"top-1 agreement with {args.reference} on {ref['samples']} {dataset.name} samples: "
            f"{percent(ref['agreement'])} %",
            highlight=False,
        )
    return 0


def _per_class(counts: dict[str, int]) -> str:
    """(class: count, ...) of one half of the calibration / held-out split."""
    return "(" + ", ".join(f"class {name}: {count}" for name, count in counts.items()) + ")"


def agreement_with(converted: Path, reference_card, card, dataset) -> dict:
    """Top-1 agreement of the converted model with a published model, on every dataset sample."""
    from harness.eval.inputs import image_preparation, prepare_inputs
    from harness.eval.outputs import predict
    from harness.model.fetch import obtain_model
    from harness.model.references import TflmReference
    from harness.model.tflite_file import read_tflite

    ours, theirs = read_tflite(converted), read_tflite(obtain_model(reference_card))
    samples = list(dataset.samples)
    a = prepare_inputs(dataset, samples, image_preparation(card.preprocessing, ours.input))
    b = prepare_inputs(dataset, samples, image_preparation(reference_card.preprocessing, theirs.input))
    run_a, run_b = TflmReference(ours), TflmReference(theirs)
    same = sum(
        predict(run_a.run(x), ours.output, card.output)[0]
        == predict(run_b.run(y), theirs.output, reference_card.output)[0]
        for x, y in zip(a.tensors, b.tensors, strict=True)
    )
    return {"samples": len(a.samples), "agreement": same / max(1, len(a.samples))}


def cmd_datasets(args) -> int:
    from harness.eval.dataset import describe_sources

    sources = describe_sources()
    if args.json:
        print_json(sources)
        return 0
    console = stdout_console()
    for source in sources:
        ready = "" if source["ready"] is None else (" (ready)" if source["ready"] else " (built on first use)")
        console.print(f"{source['name']:8} {source['kind']}{ready}: {source['location']}", highlight=False)
    return 0


def _pull_frontend(card) -> str | None:
    """A keyword card's frontend model too (fetched, or generated from its settings), so runs work offline."""
    if not getattr(card.preprocessing, "frontend", None):
        return None
    from harness.audio.frontend import frontend_file

    return str(frontend_file(card))


def cmd_models_pull(args) -> int:
    from harness.model.fetch import obtain_model

    card = load_card(args.name)
    path = obtain_model(card)  # cache, HARNESS_MODEL_MIRROR, then the source; sha256 checked
    frontend = _pull_frontend(card)
    if args.json:
        print_json({"model": card.name, "file": str(path), "sha256": card.sha256, "frontend": frontend})
    else:
        print(path)
        if frontend:  # stdout stays the model's path alone, for scripts
            print(f"frontend: {frontend}", file=sys.stderr)
    return 0


def cmd_models_list(args) -> int:
    if args.json:
        print_json([dataclasses.asdict(c) for c in all_cards().values()])
        return 0
    console = stdout_console()
    for card in all_cards().values():
        console.print(f"{card.name:28} {card.task:22} {card.title}", highlight=False)
        if card.caveat:
            console.print(f"{'':28} caveat: {card.caveat}", highlight=False, markup=False, style="dim")
    return 0


def cmd_subsets(args) -> int:
    from harness.eval.subsets import SUBSETS

    if args.json:
        print_json([dataclasses.asdict(s) for s in SUBSETS.values()])
        return 0
    console = stdout_console()
    for subset in SUBSETS.values():
        column = subset.flag or "(every labelled image)"
        console.print(f"{subset.name:22} column={column:26} family={subset.family}")
    console.print("keyword-spotting and classification cards: all, and a subset per class of the card (e.g. yes, cat)")
    return 0

"""`harness models` and `harness dataset`: model cards and datasets."""

from harness.cli.args import BOARD, command, group
from harness.defaults import DEFAULT_SPLIT_SEED, DEMO
from harness.values import (
    calibration_samples,
    distinct_names,
    output_file,
    output_folder,
    seed_number,
)


def add_models(commands) -> None:
    models = group(
        commands, "models", "model cards: list, fetch, inspect, convert", "harness models inspect mlperf_tiny_vww"
    )
    command(models, "list", "harness.cli.models:cmd_models_list", "list the model cards", "harness models list")
    pull = command(
        models,
        "pull",
        "harness.cli.models:cmd_models_pull",
        "fetch a card's model (and a keyword card's frontend) and check its sha256, for offline runs",
        "harness models pull mlperf_tiny_vww",
    )
    pull.add_argument("name", help="the card whose model to fetch and verify")

    inspect = command(
        models,
        "inspect",
        "harness.cli.models:cmd_inspect",
        "operators, MACs, arena and board fit of a model",
        ("harness models inspect mlperf_tiny_vww --board nucleo_h743", "harness models inspect my_model.tflite"),
    )
    inspect.add_argument("model", help="model card name or a .tflite file")
    BOARD.add(inspect, unset=True, purpose="only this board's fit (default: every board)")
    inspect.add_argument("--no-fit", action="store_true", help="skip the board fit table")
    inspect.add_argument("--layers", action="store_true", help="print every layer with its MACs")

    conv = command(
        models,
        "convert",
        "harness.cli.models:cmd_convert",
        "a float Keras model to full-integer TFLite",
        "harness models convert --card my_float_card.toml --model model.keras --out model.tflite",
    )
    conv.add_argument("--card", required=True, help="the float model's card: its preprocessing and output")
    conv.add_argument("--model", help="the .keras/.h5 file or SavedModel folder (default: the card's file)")
    conv.add_argument("--out", type=output_file("--out MODEL.tflite"), required=True, help="the .tflite to write")
    conv.add_argument("--dataset", default=DEMO, help="calibration and check data")
    conv.add_argument("--subset", type=distinct_names, default="all", help="subsets to draw samples from")
    conv.add_argument(
        "--samples", type=calibration_samples, default=50, help="calibration samples; the rest are held out"
    )
    conv.add_argument(
        "--seed",
        type=seed_number,
        default=DEFAULT_SPLIT_SEED,
        help="seed of the shuffled, class-stratified calibration / held-out split",
    )
    conv.add_argument("--io", default="int8", help="input/output type: int8, uint8 or float32")
    conv.add_argument("--reference", help="a published model's card to compare top-1 with on every sample")


def add_dataset(commands) -> None:
    dataset = group(
        commands, "dataset", "datasets and subsets: list, build labels, score predictions", "harness dataset subsets"
    )
    command(
        dataset, "list", "harness.cli.models:cmd_datasets", "list the dataset sources", "harness dataset list --json"
    )
    build = command(
        dataset,
        "build",
        "harness.cli.models:cmd_dataset_build",
        "Wake Vision labels for your images from Open Images-style boxes",
        "harness dataset build --annotations oi/ --images photos/ --out my_dataset",
    )
    build.add_argument(
        "--annotations", required=True, help="folder with *bbox*.csv, *class-descriptions*.csv, *miap*.csv"
    )
    build.add_argument("--images", required=True, help="folder with the images (named by ImageID)")
    build.add_argument(
        "--out",
        type=output_folder("--out"),
        required=True,
        help="folder for labels.csv (and an images/ link): a --dataset",
    )
    command(
        dataset,
        "subsets",
        "harness.cli.models:cmd_subsets",
        "list the benchmark subsets",
        "harness dataset subsets",
    )
    scorer = command(
        dataset,
        "score",
        "harness.cli.evaluation:cmd_score",
        "the eval metrics for predictions made elsewhere, against a dataset's labels",
        "harness dataset score --labels wake_vision_test.csv --predictions predictions.csv --subset all,far",
    )
    scorer.add_argument(
        "--labels",
        required=True,
        help="label CSV: the 20 Wake Vision columns, the cleaned filename,original_label,clean_label, or "
        "filename,label (0/1)",
    )
    scorer.add_argument("--predictions", required=True, help="CSV with filename,prediction[,score]")
    scorer.add_argument(
        "--clean-labels",
        metavar="PATH",
        type=distinct_names,
        help="cleaned label CSVs (or folders holding them; comma-separated) whose clean_label replaces --labels' "
        "person label ('none' or not given: none)",
    )
    scorer.add_argument(
        "--subset",
        type=distinct_names,
        help="comma-separated subsets (default: every subset the labels have the flags for)",
    )

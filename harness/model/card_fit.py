"""A card against its model file: the card's preprocessing and labels must fit the model's tensors."""

import math

from harness.errors import UserError
from harness.model.card import REFERENCE_INPUTS, FilePreprocessing, ModelCard, Preprocessing


def check_card_model(card: ModelCard, model, own_file: bool = True) -> None:
    """Refuse a card whose preprocessing or labels do not fit the model's tensors, before any run.
    `own_file`: the model is the card's own file (not --model-file, not a conversion), so its input
    type must be the card's dtype."""
    shape, outputs = model.input.shape, int(math.prod(model.output.shape))
    out = card.output
    if out.kind == "reconstruction_mse":
        _check_autoencoder(card, model)
    elif out.kind == "sigmoid" and outputs != 1:
        raise UserError(
            f"model card {card.card_path}: output.kind is sigmoid but {model.path.name} has {outputs} outputs; "
            "use softmax or logits"
        )
    elif out.kind != "sigmoid" and outputs != len(out.labels):
        raise UserError(
            f"model card {card.card_path}: output.labels names {len(out.labels)} classes but {model.path.name} "
            f"has {outputs} outputs; list one label per output"
        )
    if card.eembc and card.eembc.input == "uint8" and model.input.dtype_name != "int8":
        raise UserError(
            f"model card {card.card_path}: eembc.input 'uint8' sends an int8 input as uint8 but "
            f"{model.path.name} takes {model.input.dtype_name}; write input = 'model'"
        )
    pre = card.preprocessing
    if isinstance(pre, FilePreprocessing):
        _check_reference_input(card, model)
    if isinstance(pre, Preprocessing):
        channels = 1 if pre.color == "grayscale" else 3
        if len(shape) == 4 and tuple(shape[1:]) != (*pre.size, channels):
            raise UserError(
                f"model card {card.card_path}: preprocessing.size {list(pre.size)} and color {pre.color!r} "
                f"give {list(pre.size)}x{channels} but {model.path.name} takes {list(shape)}; match the model"
            )
        if own_file and model.input.dtype_name != pre.dtype:
            raise UserError(
                f"model card {card.card_path}: preprocessing.dtype is {pre.dtype!r} but {model.path.name} "
                f"takes {model.input.dtype_name}; write dtype = {model.input.dtype_name!r}"
            )


def _check_autoencoder(card: ModelCard, model) -> None:
    """A reconstruction: int8 in and out, one output value per input value."""
    inputs, outputs = int(math.prod(model.input.shape)), int(math.prod(model.output.shape))
    types = (model.input.dtype_name, model.output.dtype_name)
    if types != ("int8", "int8") or inputs != outputs or not (model.input.scale and model.output.scale):
        raise UserError(
            f"model card {card.card_path}: output.kind reconstruction_mse needs a quantized int8 autoencoder (as "
            f"many outputs as inputs), but {model.path.name} takes {model.input.describe()} and gives "
            f"{model.output.describe()}; pass the card of this model"
        )


def _check_reference_input(card: ModelCard, model) -> None:
    """A files card's model takes what its benchmark's files hold: the DUT is sent the model's input
    tensor, or (eembc.input float32) a float32 feature per input value."""
    takes = REFERENCE_INPUTS.get(card.eembc.model)
    values = int(math.prod(model.input.shape))
    sent = 4 * values if card.eembc.input == "float32" else model.input.bytes
    if takes and sent != takes[0]:
        raise UserError(
            f"model card {card.card_path}: its files are {card.eembc.model}'s input, {takes[1]} ({takes[0]} bytes), "
            f"but {model.path.name} takes {sent} bytes; pass that benchmark's model"
        )

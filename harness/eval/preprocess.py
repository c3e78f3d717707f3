"""Turn an image into the exact input tensor a model card asks for."""

import ctypes
import importlib.util
import io
from functools import lru_cache

import numpy as np
import simplejpeg
from PIL import Image

from harness.errors import UserError
from harness.model.card import Preprocessing
from harness.model.pipelines import DECODERS, SCALINGS, image_pipeline
from harness.reading import IMAGE, read_bytes
from harness.tensors import TensorSpec

# tf.image.rgb_to_grayscale weights, as the Wake Vision code uses for greyscale and lighting.
LUMA_WEIGHTS = np.array([0.2989, 0.5870, 0.1140], dtype=np.float32)


def luma(rgb: np.ndarray) -> np.ndarray:
    return rgb[..., :3].astype(np.float32) @ LUMA_WEIGHTS


def _axis_weights(in_size: int, out_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """tf.image.resize(method='bilinear', antialias=False): half-pixel centres, edge clamping."""
    scale = in_size / out_size
    pos = (np.arange(out_size, dtype=np.float32) + 0.5) * scale - 0.5
    floor = np.floor(pos)
    lower = np.maximum(floor, 0).astype(np.int64)
    upper = np.minimum(np.ceil(pos), in_size - 1).astype(np.int64)
    return lower, upper, (pos - floor).astype(np.float32)


@lru_cache(maxsize=64)
def _bilinear_plan(in_height: int, in_width: int, height: int, width: int):
    """Source rows and columns of every output pixel's neighbours, and the blend weights."""
    return (*_axis_weights(in_height, height), *_axis_weights(in_width, width))


@lru_cache(maxsize=1)
def _image_core() -> ctypes.CDLL:
    spec = importlib.util.find_spec("harness._imagecore")
    if spec is None or not spec.origin:
        raise UserError("the image core library is not built: reinstall harness with `pip install -e .`")
    lib = ctypes.CDLL(spec.origin)
    pointer, int32 = ctypes.c_void_p, ctypes.c_int32
    for function in (lib.hp_resize_bilinear_u8, lib.hp_resize_bilinear_f32):
        function.argtypes = [pointer, int32, int32, pointer, pointer, pointer, int32, pointer, pointer, pointer, int32]
        function.argtypes += [pointer]
        function.restype = None
    return lib


def resize_bilinear(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """tf.image.resize(method='bilinear'), TF's float32 arithmetic in its order: top = tl + (tr - tl) * fx,
    bottom likewise, top + (bottom - top) * fy (harness/eval/bilinear.c; the call releases the GIL, so
    decoding threads resize side by side). uint8 images are read as they are, others as float32."""
    if image.ndim == 2:
        image = image[..., None]
    pixel = np.uint8 if image.dtype == np.uint8 else np.float32
    image = np.ascontiguousarray(image, dtype=pixel)
    y0, y1, fy, x0, x1, fx = _bilinear_plan(image.shape[0], image.shape[1], height, width)
    out = np.empty((height, width, image.shape[2]), np.float32)
    blend = _image_core().hp_resize_bilinear_u8 if pixel is np.uint8 else _image_core().hp_resize_bilinear_f32
    blend(
        image.ctypes.data, image.shape[1], image.shape[2], y0.ctypes.data, y1.ctypes.data, fy.ctypes.data,
        height, x0.ctypes.data, x1.ctypes.data, fx.ctypes.data, width, out.ctypes.data,
    )  # fmt: skip
    return out


def _area_weights(in_size: int, out_size: int) -> np.ndarray:
    """Row i averages input [i*scale, (i+1)*scale) by overlap, as tf.image.resize(method='area')."""
    scale = in_size / out_size
    starts = np.arange(out_size) * scale
    ends = starts + scale
    cells = np.arange(in_size)
    overlap = np.minimum(ends[:, None], cells[None, :] + 1) - np.maximum(starts[:, None], cells[None, :])
    return (np.clip(overlap, 0, None) / scale).astype(np.float64)


def resize_area(image: np.ndarray, height: int, width: int) -> np.ndarray:
    image = image.astype(np.float64)
    rows = _area_weights(image.shape[0], height)
    cols = _area_weights(image.shape[1], width)
    return np.einsum("ij,jkc,lk->ilc", rows, image, cols, optimize=True).astype(np.float32)


def paper_resize_and_crop(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """Wake Vision paper: shorter side to the target by area resize (new sides rounded), then a
    centre crop whose offsets round down."""
    h, w = image.shape[:2]
    ratio = max(height, width) / min(h, w)
    new_h, new_w = max(height, round(h * ratio)), max(width, round(w * ratio))
    resized = resize_area(image, new_h, new_w)
    top, left = (new_h - height) // 2, (new_w - width) // 2
    return resized[top : top + height, left : left + width]


# Each (interpolation, crop) a pipeline declares (harness/model/pipelines.py), as it is done; scaling,
# colour and quantization follow from the card.
GEOMETRIES = {
    ("bilinear", "none"): resize_bilinear,  # bilinear stretch of the whole image, no crop
    ("area", "centre"): paper_resize_and_crop,  # shorter side to the target by area resize, centre crop
}


# Naming the formats spares PIL probing every plugin on each open (it adds up over a dataset).
IMAGE_FORMATS = ("JPEG", "PNG", "BMP", "GIF", "WEBP", "TIFF", "PPM")
JPEG_MAGIC = b"\xff\xd8\xff"
# Colour spaces where libjpeg-turbo's own RGB output is what PIL's decode + convert("RGB") gives;
# CMYK and the rest go through PIL, whose CMYK conversion differs from libjpeg's.
_DIRECT_JPEG_COLOURS = {"YCbCr", "Gray"}


def decoder_for(pre: Preprocessing) -> str:
    """The card's decoder, else its pipeline's reference's: pixels differ between the two, so a pipeline
    decodes as its reference does."""
    decoder = pre.decoder or image_pipeline(pre.pipeline).decoder
    if decoder not in DECODERS:
        raise UserError(f"preprocessing decoder {decoder!r} is unknown; use one of {', '.join(DECODERS)}")
    return decoder


def load_rgb(path, decoder: str = "pil") -> np.ndarray:
    """HxWx3 uint8, decoded as `decoder` does. JPEGs go through simplejpeg (libjpeg-turbo, the DCT
    chosen to match) in one C call that holds no GIL, which lets the decoding threads run side by side.
    The file is read through harness.reading (a regular file, at most IMAGE.max_bytes)."""
    data = read_bytes(path, IMAGE)
    if data.startswith(JPEG_MAGIC):
        try:
            colour = simplejpeg.decode_jpeg_header(data)[2]
        except ValueError:
            colour = None  # let PIL name what is wrong with it
        if colour in _DIRECT_JPEG_COLOURS:
            return simplejpeg.decode_jpeg(data, colorspace="RGB", fastdct=decoder == "tf")
    with Image.open(io.BytesIO(data), formats=IMAGE_FORMATS) as image:
        return _as_rgb(image)


SIXTEEN_BIT_GREY = {"I;16", "I;16B", "I;16L", "I;16N"}
# 257·v is the 16-bit twin of the 8-bit value v (0 → 0, 255 → 65535): v = round(w / 257) undoes it exactly.
TWIN_FACTOR = 257.0


def _rawmode(image: Image.Image) -> str:
    """How the file stores its pixels (e.g. 'RGB;16B': 16 bits a channel), before PIL narrows them."""
    args = image.tile[0].args if image.tile else ""
    return args if isinstance(args, str) else str(args[0]) if args else ""


def _as_rgb(image: Image.Image) -> np.ndarray:
    """The pixels as HxWx3 uint8. 16-bit grey is reduced exactly to its 8-bit twin; wider colour samples or
    32-bit pixels, which PIL would truncate or clip to another input without a word, are refused."""
    if image.mode in SIXTEEN_BIT_GREY:
        grey = np.rint(np.asarray(image, dtype=np.float64) / TWIN_FACTOR).astype(np.uint8)
        return np.repeat(grey[..., None], 3, axis=2)
    if image.mode in ("I", "F") or ";16" in _rawmode(image):
        raise ValueError(
            f"its pixels are {image.mode} with {_rawmode(image) or image.mode} samples, more than 8 bits a channel, "
            "which harness does not narrow; save it with 8 bits a channel"
        )
    return np.asarray(image if image.mode == "RGB" else image.convert("RGB"))


def real_input(rgb: np.ndarray, pre: Preprocessing) -> np.ndarray:
    """The model's input in real units, HxWxC float32."""
    geometry = GEOMETRIES[image_pipeline(pre.pipeline).geometry]
    if pre.scaling not in SCALINGS:
        raise UserError(f"preprocessing scaling {pre.scaling!r} is unknown; use one of {', '.join(SCALINGS)}")
    resized = geometry(rgb, *pre.size)
    if pre.color == "grayscale":
        resized = luma(resized)[..., None]
    scaling = SCALINGS[pre.scaling]
    scaled = resized if scaling.name == "raw" else resized / scaling.divisor + scaling.offset
    return scaled.astype(np.float32, copy=False)


def image_tensor(path, pre: Preprocessing, spec: TensorSpec) -> np.ndarray:
    """An image file to the model's input tensor, exactly as the card's reference pipeline would."""
    return to_tensor(real_input(load_rgb(path, decoder_for(pre)), pre), spec, pre.rounding, reuse=True)


def to_tensor(real: np.ndarray, spec: TensorSpec, rounding: str = "round", reuse: bool = False) -> np.ndarray:
    """With `reuse` the real values' array may be overwritten (one copy fewer per image)."""
    """Quantize or cast real values into the model's input tensor (with its batch dimension)."""
    if int(np.prod(spec.shape)) != real.size:
        raise UserError(
            f"preprocessing gives {list(real.shape)} but the model input is {list(spec.shape)}; fix the card"
        )
    dtype = spec.numpy_dtype
    if np.issubdtype(dtype, np.floating):
        values = real
    else:
        identity = spec.is_quantized and spec.scale == 1.0 and spec.zero_point == 0
        if spec.is_quantized and not identity:
            values = real / spec.scale + spec.zero_point
        else:
            values = real if reuse else real.copy()
        if rounding == "truncate":
            np.floor(values, out=values)
        else:
            np.round(values, out=values)
        info = np.iinfo(dtype)
        np.clip(values, info.min, info.max, out=values)
    return values.astype(dtype).reshape(spec.shape)

"""The card file's declared shape: every table and key a card may hold, with its type, and how a file that
does not fit it is refused."""

from pathlib import Path

import pydantic

from harness import reading
from harness.defaults import DEFAULT_MODEL
from harness.errors import UserError

# The card file's declared shape: every table and key a card may hold, with its type. It refuses what the
# checks below do not look at (a misspelt or unknown key anywhere, a number where text belongs); the checks
# below then say what each value must be, in the card's own words.
_CARD_CONFIG = pydantic.ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class _Table(pydantic.BaseModel):
    model_config = _CARD_CONFIG


class _FileTable(_Table):
    name: str | None = None
    sha256: str | None = None


class _SourceTable(_Table):
    kind: str | None = None
    path: str | None = None
    url: str | None = None
    mirror_path: str | None = None
    package: str | None = None
    version: str | None = None
    python_version: str | None = None
    platform: str | None = None
    member: list[str] | None = None


class _PreprocessingTable(_Table):
    pipeline: str | None = None
    size: list[int] | None = None
    color: str | None = None
    interpolation: str | None = None
    crop: str | None = None
    scaling: str | None = None
    dtype: str | None = None
    rounding: str | None = None
    decoder: str | None = None
    sample_rate: int | None = None
    clip_ms: int | None = None
    window_ms: int | None = None
    stride_ms: int | None = None


class _FrontendTable(_Table):
    kind: str | None = None
    name: str | None = None
    sha256: str | None = None
    url: str | None = None
    path: str | None = None
    mirror_path: str | None = None
    # kind = "microfrontend": the settings harness/audio/microfrontend.py generates the frontend from
    channels: int | None = None
    lower_band_hz: float | None = None
    upper_band_hz: float | None = None
    log_scale_shift: int | None = None
    scale: float | None = None


class _OutputTable(_Table):
    kind: str | None = None
    positive_index: int | None = None
    labels: list[str] | None = None
    threshold: float | None = None
    silence_label: str | None = None
    unknown_label: str | None = None


class _StreamingTable(_Table):
    model_every: int | None = None
    average_ms: int | None = None
    min_count: int | None = None
    suppression_ms: int | None = None
    threshold: int | None = None
    keywords: list[str] | None = None


class _EembcTable(_Table):
    model: str | None = None
    input: str | None = None


class CardFile(_Table):
    """A model card file as written: its tables and keys."""

    name: str | None = None
    title: str | None = None
    task: str | None = None
    licence: str | None = None
    notes: str | None = None
    caveat: str | None = None
    file: _FileTable | None = None
    source: _SourceTable | None = None
    preprocessing: _PreprocessingTable | None = None
    frontend: _FrontendTable | None = None
    output: _OutputTable | None = None
    streaming: _StreamingTable | None = None
    eembc: _EembcTable | None = None


UNKNOWN_KEY = ("extra_forbidden", "unexpected_keyword_argument")


def schema_error(data: dict) -> pydantic.ValidationError | None:
    try:
        CardFile.model_validate(data)
    except pydantic.ValidationError as exc:
        return exc
    return None


def refuse_schema(path: Path, error: pydantic.ValidationError) -> UserError:
    fix = f"compare it with models/{DEFAULT_MODEL}.toml"
    return UserError(f"model card {path}: {reading.first_problem(error)}; {fix}")

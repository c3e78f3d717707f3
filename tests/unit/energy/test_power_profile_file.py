"""The simulated meter's power profile file is read through harness.reading and a schema."""

import os

import pytest

from harness.energy.profile import PowerProfile
from harness.errors import UserError


def test_a_profile_reads_back(tmp_path):
    (tmp_path / "p.json").write_text('{"idle_watts": 0.09, "pulses": [[1.0, 2.0, 0.1]]}')
    assert PowerProfile.load(tmp_path / "p.json") == PowerProfile(0.09, 3.3, ((1.0, 2.0, 0.1),))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[1, 2]", "power profile"),
        ('{"idle_watts": NaN}', "field 'idle_watts' is nan, not a finite number"),
        ('{"idle_watts": 0.1, "idle_wats": 0.2}', "unknown field 'idle_wats'"),
        ('{"idle_watts": 0.1, "pulses": [[1, 2]]}', "field 'pulses.0"),
        ("[" * 10000 + "]" * 10000, "deep"),
    ],
)
def test_a_bad_profile_is_one_line(tmp_path, text, words):
    (tmp_path / "p.json").write_text(text)
    with pytest.raises(UserError, match="power profile") as refused:
        PowerProfile.load(tmp_path / "p.json")
    assert words in str(refused.value)


def test_a_profile_that_is_a_fifo_does_not_block(tmp_path):
    os.mkfifo(tmp_path / "p.json")
    with pytest.raises(UserError, match="is a FIFO"):
        PowerProfile.load(tmp_path / "p.json")

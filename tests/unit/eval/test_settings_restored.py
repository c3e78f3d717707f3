"""A resumed run reads its settings back (request.json) as the options declare them: in range, names once each."""

import pytest

from harness.errors import UserError
from harness.eval.settings import EvalSettings

STORED = EvalSettings().stored()


def test_the_stored_settings_read_back_as_they_were():
    assert EvalSettings.restored(STORED) == EvalSettings()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"boards": 65}, ("setting boards", "at most 64")),
        ({"references": ["tflm", "tflm"]}, ("setting references", "twice")),
        ({"subset": "all,all"}, ("setting subset", "twice")),
        ({"link_baud": -5}, ("setting link_baud", "baud rate")),
        ({"limit": 10**9}, ("setting limit", "at most")),
        ({"limit": 0}, ("setting limit", "at least 1")),
    ],
)
def test_a_setting_out_of_its_options_range_is_damaged(change, words):
    with pytest.raises(UserError) as refused:
        EvalSettings.restored(STORED | change, "request.json")
    message = str(refused.value)
    assert message.startswith("request.json: setting ") and message.endswith("start a new run")
    for word in words:
        assert word in message, message


def test_a_setting_harness_does_not_have_is_damaged():
    with pytest.raises(UserError, match=r"^request.json: setting 'evil' is not one harness has .*start a new run$"):
        EvalSettings.restored(STORED | {"evil": 1}, "request.json")

"""A command's ConnectOptions are made in one place (ConnectOptions.named_by) from the settings it has."""

import argparse
import dataclasses

from harness.device.drivers.base import NAMED_BY_SETTINGS, ConnectOptions
from harness.eval.settings import EvalSettings
from harness.link.faults import FaultSpec
from harness.link.roles import KeywordStreaming, LinkTesting


def test_the_settings_of_a_run_name_every_connection_field():
    faults = FaultSpec(drop=0.001)
    settings = EvalSettings.from_keywords(
        board="sim", port="/dev/ttyACM0", serial="A1", protocol="eembc", faults=faults, labgrid_place="lab-1"
    )
    options = ConnectOptions.named_by(settings, roles=(KeywordStreaming,))
    assert options == ConnectOptions(
        port="/dev/ttyACM0",
        serial_number="A1",
        protocol="eembc",
        faults=faults,
        labgrid_place="lab-1",
        roles=(KeywordStreaming,),
    )
    fields = {f.name for f in dataclasses.fields(EvalSettings)}
    assert set(NAMED_BY_SETTINGS) <= fields  # each is a setting's own name, as the flags and the API spell it


def test_a_command_without_a_setting_keeps_its_default_and_what_it_adds_wins():
    args = argparse.Namespace(port="socket://localhost:5000", labgrid_place=None, faults=None, bytes=10)
    options = ConnectOptions.named_by(args, roles=(LinkTesting,))
    assert options == ConnectOptions(port="socket://localhost:5000", roles=(LinkTesting,))
    assert ConnectOptions.named_by(argparse.Namespace(protocol="eembc"), protocol="harness").protocol == "harness"

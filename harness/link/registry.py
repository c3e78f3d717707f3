"""The wire protocols a board may speak (`--protocol`): one registration each, and every list of them derives
from here (the parser's choices, the drivers' protocols, the session a driver puts on a link).

Importing nothing, so the parser can show the names without the link's packages: each entry names its session
class (a harness/link/session.py DeviceSession) as "module:Class", imported when a board connects.
A new protocol is its module plus one line here.
"""

import importlib

PROTOCOLS: dict[str, str] = {
    "harness": "harness.link.client:DeviceClient",  # docs/protocol.md: what harness's own firmware speaks
    "eembc": "harness.link.eembc:EembcClient",  # MLPerf Tiny / EEMBC DUT firmware (docs/eembc.md)
}
PROTOCOL_NAMES = tuple(PROTOCOLS)
# What the firmware harness builds speaks (QEMU and hosted boards run nothing else): the default everywhere.
NATIVE_PROTOCOL = "harness"


def session_type(name: str) -> type:
    """The session class of protocol `name`; a UserError naming the choices for an unknown one."""
    if name not in PROTOCOLS:
        from harness.errors import UserError

        raise UserError(f"unknown protocol {name!r}; choose one of {', '.join(PROTOCOLS)}")
    module, cls = PROTOCOLS[name].split(":")
    return getattr(importlib.import_module(module), cls)

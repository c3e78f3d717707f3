"""LG_COORDINATOR, the labgrid coordinator's address, checked before harness writes anything or starts a board:
`host` or `host:port`, the host a name (RFC 1123), an IPv4 address or an IPv6 one in brackets, the port
1 to 65535. labgrid itself reads a malformed address only as it dials, and fails with a traceback."""

import ipaddress
import os
import re

from harness.digits import ascii_int
from harness.errors import UserError

ENV = "LG_COORDINATOR"
COORDINATOR_PORT = 20408  # labgrid's own default
DEFAULT_COORDINATOR = f"127.0.0.1:{COORDINATOR_PORT}"

_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_PORT = re.compile(r"[0-9]{1,5}")


def coordinator_address() -> str:
    """LG_COORDINATOR as given (unset or empty: labgrid's default, 127.0.0.1:20408), once it is checked."""
    text = os.environ.get(ENV) or DEFAULT_COORDINATOR
    problem = address_problem(text)
    if problem:
        raise UserError(
            f"{ENV}={text!r} is not a coordinator address: {problem}; set it to host:port "
            f"(e.g. {DEFAULT_COORDINATOR}, [::1]:{COORDINATOR_PORT}, coordinator.lab:{COORDINATOR_PORT}), or unset it"
        )
    return text


def address_problem(text: str) -> str | None:
    """What is wrong with `text` as host[:port], or None."""
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket:
            return "an IPv6 address opened with [ is not closed with ]"
        if rest and not rest.startswith(":"):
            return f"{rest!r} follows the IPv6 address; only :port may"
        port = rest[1:] if rest else None
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return f"{host!r} is not an IPv6 address"
    else:
        if text.count(":") > 1:
            return "an IPv6 address goes in brackets ([::1]:20408), and a host has one :port at most"
        host, colon, port = text.partition(":")
        if colon and not port:
            return "the port after : is missing"
        port = port if colon else None
        host_problem = _host_problem(host)
        if host_problem:
            return host_problem
    if port is not None and not _port_fine(port):
        return f"the port {port!r} is not a number from 1 to 65535"
    return None


def _host_problem(host: str) -> str | None:
    if not host:
        return "the host is missing"
    try:
        ipaddress.IPv4Address(host)
        return None
    except ValueError:
        pass
    if re.fullmatch(r"[0-9.]+", host):
        return f"{host!r} is not an IPv4 address"
    name = host.removesuffix(".")
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in name.split(".")):
        return f"{host!r} is not a host name (letters, digits and - in dot-separated labels) or an IP address"
    return None


def _port_fine(port: str) -> bool:
    return bool(_PORT.fullmatch(port)) and 1 <= ascii_int(port) <= 65535

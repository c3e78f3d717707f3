"""The forms of a board's port (--port): a device path, or a pyserial URL whose form can be checked before
anything is opened (harness/link/transport.py opens it)."""

from urllib.parse import urlsplit

# pyserial's URL schemes; socket:// and rfc2217:// reach a board over the network and name HOST:PORT.
_NETWORK_SCHEMES = ("socket", "rfc2217")
_LOCAL_SCHEMES = ("loop", "spy", "alt", "hwgrep", "cp2110")
PORT_FORMS = "a serial device (/dev/ttyACM0, COM3), auto, socket://HOST:PORT, rfc2217://HOST:PORT or loop://"


def port_url_problem(url: str, custom_schemes: bool = False) -> str | None:
    """Why `url` cannot name a board's port (None: it can). `custom_schemes`: HARNESS_URL_HANDLERS adds schemes
    of its own, which only pyserial can judge."""
    if not url.strip():
        return "it is empty"
    scheme, separator, _ = url.partition("://")
    if not separator:
        return None  # a device path: whether it opens is the board's business (exit 3)
    scheme = scheme.lower()
    if scheme in _LOCAL_SCHEMES:
        return None
    if scheme not in _NETWORK_SCHEMES:
        return None if custom_schemes else f"protocol {scheme!r} not known"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # a bracket left open, a port that is no number or out of 0..65535
        return "its host or port cannot be read" if "IPv6" in str(exc) else "its port is not a number from 1 to 65535"
    if not parts.hostname or port is None:
        return f"{scheme}:// needs HOST:PORT"
    if not 1 <= port <= 65535:
        return "its port is not a number from 1 to 65535"
    return None

"""Whether a host name or address is this computer's own: what the server listens on, where a key may go in clear."""

from __future__ import annotations

import ipaddress

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """localhost, 127.0.0.0/8 and ::1 (bracketed or not)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False

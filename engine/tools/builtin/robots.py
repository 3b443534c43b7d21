"""robots.txt, read once per site and kept for the session: a page its site asks robots to leave is not fetched.

Read as the robots exclusion standard says (RFC 9309): no robots.txt (a 4xx) allows everything; 401
and 403 are read as "everything disallowed", as Python's robotparser reads them; a site that does not
answer for its robots.txt is fetched (the page request itself then says what is wrong).
"""

from __future__ import annotations

import threading
from urllib.parse import urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser

import httpx2

from engine.tools.builtin.web_client import (
    ROBOTS_AGENT,
    FetchError,
    WebLimits,
    decode,
    get,
)

ROBOTS_LIMITS = WebLimits(max_bytes=500_000, timeout_s=5.0)  # RFC 9309 asks crawlers to read at least 500 KiB


class RobotsRules:
    """The robots.txt of each site seen, parsed; thread-safe (calls may run at the same time)."""

    def __init__(self) -> None:
        self._sites: dict[str, RobotFileParser] = {}
        self._lock = threading.Lock()

    def allows(self, client: httpx2.Client, url: str) -> bool:
        parts = urlsplit(url)
        site = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
        with self._lock:
            rules = self._sites.get(site)
        if rules is None:
            rules = _read(client, site)
            with self._lock:
                self._sites[site] = rules
        return rules.can_fetch(ROBOTS_AGENT, url)


def _read(client: httpx2.Client, site: str) -> RobotFileParser:
    rules = RobotFileParser(f"{site}/robots.txt")
    try:
        body = get(client, f"{site}/robots.txt", ROBOTS_LIMITS, accept="text/plain")
    except FetchError:
        rules.parse([])  # unreachable: the page's own request will say so
        return rules
    if body.status in (401, 403):
        rules.parse(["User-agent: *", "Disallow: /"])
    elif 200 <= body.status < 300:
        rules.parse(decode(body).splitlines())
    else:
        rules.parse([])
    return rules

"""The HTTP side of the web tools: one guarded GET, redirects followed by hand, a body read within limits.

No cookies are kept or sent, no credentials, no proxy from the environment, and the User-Agent names
Hearth. Redirects are followed here, not by the client, so every hop is checked: its scheme (http and
https only), and its address by the guard (engine/tools/builtin/guard.py) as the connection opens.
The body is streamed and reading stops past the size limit or the time limit, whichever comes first.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from urllib.parse import urljoin, urlsplit

import httpx2

from engine.tools.builtin.guard import AddressGuard, GuardedBackend

USER_AGENT = "Hearth/0.1 (desktop chat app; fetches a page when its user allows it)"
ROBOTS_AGENT = "Hearth"
MAX_REDIRECTS = 5


class FetchError(Exception):
    """A fetch that gave nothing usable; `str(error)` is for the model and the person."""


@dataclass(frozen=True)
class WebLimits:
    max_bytes: int = 2_000_000
    timeout_s: float = 20.0


@dataclass(frozen=True)
class Body:
    """What a GET gave: the final URL after redirects, its status, content type and charset, the bytes read."""

    url: str
    status: int
    content_type: str
    charset: str
    data: bytes
    cut: bool  # reading stopped at the size limit: there was more


def guarded_client(guard: AddressGuard, timeout_s: float) -> httpx2.Client:
    """A client whose every connection the guard checks; no cookies, no env proxies, redirects not followed."""
    transport = httpx2.HTTPTransport(trust_env=False)
    # httpx2 takes no network backend of its own: the pool it built is given the guarded one.
    transport._pool._network_backend = GuardedBackend(guard)  # type: ignore[attr-defined]
    no_cookies = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))
    return httpx2.Client(transport=transport, trust_env=False, follow_redirects=False, cookies=no_cookies,
                         headers={"User-Agent": USER_AGENT}, timeout=httpx2.Timeout(timeout_s))


def check_url(url: str) -> str:
    """The URL if it is one a web tool may open (http or https, with a host, no user:password), else FetchError."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(f"Only http:// and https:// addresses can be fetched, not {url!r}.")
    if parts.username or parts.password:
        raise FetchError("An address with a user name or password in it is not fetched.")
    return url.strip()


def get(client: httpx2.Client, url: str, limits: WebLimits, accept: str = "*/*") -> Body:
    """GET `url`, following at most MAX_REDIRECTS redirects, each one checked; FetchError says what went wrong."""
    deadline = time.monotonic() + limits.timeout_s
    current = check_url(url)
    for _hop in range(MAX_REDIRECTS + 1):
        try:
            with client.stream("GET", current, headers={"Accept": accept}, timeout=_left(deadline)) as response:
                if response.is_redirect and "location" in response.headers:
                    current = check_url(urljoin(current, response.headers["location"]))
                    continue
                data, cut = _read(response, limits.max_bytes, deadline)
                kind, charset = _content_type(response.headers.get("content-type", ""))
                return Body(str(response.url), response.status_code, kind, charset, data, cut)
        except httpx2.TimeoutException:
            raise FetchError(f"{current} did not answer within {limits.timeout_s:g} s; nothing was read.") from None
        except httpx2.ConnectError as error:
            raise FetchError(str(error) if str(error).startswith("Refused") else
                             f"{current} could not be reached: {error}") from None
        except httpx2.HTTPError as error:
            raise FetchError(f"{current} could not be read: {error or type(error).__name__}") from None
    raise FetchError(f"{url} redirected more than {MAX_REDIRECTS} times; it was not followed further.")


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise httpx2.ReadTimeout("the time limit was reached")
    return left


def _read(response: httpx2.Response, max_bytes: int, deadline: float) -> tuple[bytes, bool]:
    """At most `max_bytes` of the body (whether there was more), before the deadline."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return b"".join(chunks)[:max_bytes], True
        _left(deadline)  # a page that trickles in is cut off at the same limit as one that never starts
    return b"".join(chunks), False


def _content_type(header: str) -> tuple[str, str]:
    """("text/html", "iso-8859-1") of a Content-Type header; "" for what it does not say."""
    kind, _, rest = header.partition(";")
    found = re.search(r"charset\s*=\s*\"?([\w.:-]+)", rest, re.IGNORECASE)
    return kind.strip().lower(), found.group(1).lower() if found else ""


def decode(body: Body) -> str:
    """The body as text: the header's charset, else a <meta charset> near the top, else UTF-8, else Windows-1252."""
    for charset in (body.charset, _meta_charset(body.data[:4096])):
        if charset:
            try:
                return body.data.decode(charset, errors="replace")
            except LookupError:  # a charset Python does not know: try the next way
                continue
    try:
        return body.data.decode("utf-8")
    except UnicodeDecodeError:
        return body.data.decode("cp1252", errors="replace")


def _meta_charset(head: bytes) -> str:
    found = re.search(rb"<meta[^>]+charset\s*=\s*[\"']?([\w.:-]+)", head, re.IGNORECASE)
    return found.group(1).decode("ascii").lower() if found else ""

"""What went wrong talking to a remote server, said for a person: refused, no such name, TLS, timeout, 401, HTML.

Also the base URL's normal form: users paste `http://host:8000`, `host:8000/v1/`
or `https://host/v1/chat/completions`; every request goes to `<base>/v1/...`.
A URL typed without a scheme gets https, since its requests carry the API key;
only this computer's own addresses (localhost, 127.0.0.1, ::1) get http.
"""

from __future__ import annotations

import errno
import json
import socket
import ssl

import httpx2

from engine.loopback import is_loopback

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


def base_url(url: str) -> str:
    """`scheme://host:port` (with any path prefix before /v1), no trailing slash; without a scheme, https://
    (http:// for this computer's own addresses)."""
    url = url.strip()
    if url and "://" not in url:
        url = ("http://" if is_loopback(_host_of(url)) else "https://") + url
    url = url.rstrip("/")
    for tail in ("/chat/completions", "/models", "/v1"):
        if url.endswith(tail):
            url = url[: -len(tail)].rstrip("/")
    return url


def _host_of(address: str) -> str:
    """The host of `host:port/path`, `[::1]:8000` or a bare `::1`."""
    authority = address.split("/", 1)[0]
    if authority.startswith("["):
        return authority[1:].split("]", 1)[0]
    if authority.count(":") > 1:
        return authority  # a bare IPv6 address
    return authority.split(":", 1)[0]


def endpoint(url: str, path: str) -> str:
    return f"{base_url(url)}/v1/{path}"


def headers(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def _causes(error: BaseException) -> list[BaseException]:
    chain, seen = [], set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def is_refused(error: BaseException) -> bool:
    """The server's machine answered but nothing listens on that port (a server restarting, not yet up)."""
    for cause in _causes(error):
        if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) in (errno.ECONNREFUSED, 10061):
            return True
    return "connection refused" in str(error).lower() or "connect call failed" in str(error).lower()


def explain_transport(error: BaseException, url: str) -> str:
    """A failure before any HTTP answer: which one, and what to check."""
    where = base_url(url) or url
    causes = _causes(error)
    text = " ".join(str(cause) for cause in causes).lower()
    if any(isinstance(cause, ssl.SSLError) for cause in causes) or "ssl" in text or "certificate" in text:
        return (f"The TLS (https) connection to {where} failed: {error}. Check that the URL's scheme matches the "
                f"server (http:// or https://) and that its certificate is trusted.")
    if any(isinstance(cause, socket.gaierror) for cause in causes) or "name or service not known" in text \
            or "nodename nor servname" in text or "getaddrinfo" in text or "name resolution" in text:
        return f"The server's name in {where} could not be found. Check the spelling of the host name."
    if isinstance(error, httpx2.ConnectTimeout):
        return f"{where} did not accept a connection in time. Is the address right and the machine reachable?"
    if isinstance(error, httpx2.TimeoutException):
        return f"{where} accepted the connection but did not answer in time."
    if is_refused(error):
        return f"Nothing is listening at {where} (connection refused). Is the server running on that port?"
    if isinstance(error, httpx2.UnsupportedProtocol | httpx2.InvalidURL):
        return f"{url!r} is not a usable server address; it looks like http://host:8000."
    return f"Could not reach {where}: {error or type(error).__name__}."


def error_text(body: str) -> str:
    """The message of an OpenAI-style `{"error": {"message": ...}}` (or `{"detail": ...}`) body, else ''."""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    error = data.get("error", data.get("detail", ""))
    if isinstance(error, dict):
        error = error.get("message", "") or json.dumps(error)
    return str(error)[:500]


def looks_like_html(content_type: str, body: str) -> bool:
    return "html" in content_type.lower() or body.lstrip()[:15].lower().startswith(("<!doctype", "<html"))


def explain_status(status: int, content_type: str, body: str, url: str) -> str:
    """A refused request: 401/403 a key, 404 or HTML no OpenAI API there, the rest with the server's own words."""
    where = base_url(url)
    said = error_text(body)
    if status in (401, 403):
        return (f"{where} refused the API key ({status}{': ' + said if said else ''}). "
                f"Check the key in Settings > Backend.")
    if looks_like_html(content_type, body):
        return (f"{where} answered with a web page (HTTP {status}), not an OpenAI-compatible API. "
                f"Check the URL: the server's API usually ends in /v1.")
    if status == 404:
        return f"{where} has no OpenAI-compatible API at /v1 (404{': ' + said if said else ''}). Check the URL."
    if status == 429:
        return f"{where} is busy (429, too many requests){': ' + said if said else ''}. Try again in a moment."
    return f"{where} refused the request (HTTP {status}){': ' + said if said else ''}."

"""A stand-in web on 127.0.0.1 for `--research`: article pages with menus and footers around the text (so the
extractor has work to do), a robots.txt, and a SearXNG-shaped JSON search whose results are those pages.
Never the internet. The pages are reached as `news.test` (a name the bench's address guard resolves to
127.0.0.1 and allows, as a person allows their NAS), so the guard runs on every fetch as it would.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from engine.tools.builtin.guard import AddressGuard, RefusedAddress

HOST = "news.test"
TOPICS = ("kettles", "lighthouses", "tides", "copper", "bread", "bicycles", "harbours", "clocks")
_SENTENCES = ("The history of {topic} is longer than most people think, and it begins in small workshops.",
              "Early makers of {topic} worked by hand, and each piece took days to finish.",
              "By the nineteenth century, factories made {topic} cheaper and more common in every town.",
              "Today, people who study {topic} still argue about which design came first.",
              "Museums keep old examples of {topic} behind glass, with cards that explain how they were used.")


def article(number: int, topic: str) -> str:
    """One page: a menu, the article (ten paragraphs), a sidebar and a footer."""
    paragraphs = "".join(f"<p>{' '.join(s.format(topic=topic) for s in _SENTENCES)} (Part {part}.)</p>"
                         for part in range(1, 11))
    menu = "".join(f'<li><a href="/{name}">{name.title()}</a></li>' for name in TOPICS)
    return (f"<html><head><title>All about {topic} ({number})</title></head><body><nav><ul>{menu}</ul></nav>"
            f"<main><article><h1>All about {topic}</h1>{paragraphs}</article></main>"
            f"<aside>Related: {', '.join(TOPICS)}</aside><footer>Copyright the stand-in web. Contact us. "
            "Privacy. Terms.</footer></body></html>")


@dataclass
class BenchWeb:
    port: int

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self.port}{path}"

    def search_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def guard(self) -> AddressGuard:
        def resolver(host: str, port: int) -> list[str]:
            if host == HOST:
                return ["127.0.0.1"]
            if host.replace(".", "").isdigit() or ":" in host:  # an address is itself (and is judged as one)
                return [host]
            raise RefusedAddress(f"The host {host} could not be found (stand-in web).")

        return AddressGuard(resolver, allowed_hosts=(HOST,))


class _Handler(BaseHTTPRequestHandler):
    web: BenchWeb

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # the standard library names it
        parts = urlsplit(self.path)
        if parts.path == "/robots.txt":
            self._send("text/plain", b"User-agent: *\nDisallow: /private\n")
        elif parts.path == "/search":
            self._send("application/json", self._results(parse_qs(parts.query).get("q", [""])[0]))
        elif parts.path.startswith("/page/"):
            number = int(parts.path.rsplit("/", 1)[1] or 0) % len(TOPICS)
            self._send("text/html; charset=utf-8", article(number, TOPICS[number]).encode())
        else:
            self._send("text/plain", b"not here", 404)

    def _results(self, query: str) -> bytes:
        rows = [{"title": f"All about {topic} ({number})", "url": self.web.url(f"/page/{number}"),
                 "content": f"{topic.title()}: history, makers and museums. {query}"}
                for number, topic in enumerate(TOPICS)]
        return json.dumps({"query": query, "results": rows}).encode()

    def _send(self, kind: str, body: bytes, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


W = TypeVar("W")


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], make_web: Callable[[int], W], name: str) -> Iterator[W]:
    """A threaded HTTP server on 127.0.0.1 (a free port) whose handlers see `make_web(port)` as `self.web`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    web = make_web(int(server.server_address[1]))
    server.RequestHandlerClass = type("Handler", (handler,), {"web": web})
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield web
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@contextmanager
def bench_web() -> Iterator[BenchWeb]:
    with serving(_Handler, BenchWeb, "bench stand-in web") as web:
        yield web

"""Where a built-in web tool may connect: public addresses only, unless the person allowed more.

A model can be talked into asking for http://192.168.1.1/admin or a cloud's metadata address
(169.254.169.254); fetching it would turn the chat into a way into the person's own network.
So every connection a web tool opens, the first and every redirect hop, asks this guard: the host
is resolved (through an injectable resolver: tests pretend names are public), every address it
resolves to must be public, and the connection goes to exactly the address that was checked, so
a name that resolves differently a moment later (DNS rebinding) cannot slip past.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpcore2

Resolver = Callable[[str, int], list[str]]  # host, port -> the IP addresses it resolves to


class RefusedAddress(Exception):
    """A connection the guard refused; `str(error)` says why, for the model and the person."""


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolves `host` to (IPv4 and IPv6)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise RefusedAddress(f"The host {host} could not be found ({error.strerror}).") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def is_public(address: str) -> bool:
    """Whether the address is on the public internet: not private, loopback, link-local, multicast,
    reserved or unspecified (an IPv4 address inside IPv6 is judged as the IPv4 one)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 zone ("fe80::1%eth0") names no other place
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_link_local or ip.is_loopback)


@dataclass(frozen=True)
class AddressGuard:
    """`allow_private`: the person allowed every address (a setting); `allowed_hosts`: names or addresses
    they allowed one by one (their NAS, a local wiki)."""

    resolver: Resolver = system_resolver
    allow_private: bool = False
    allowed_hosts: tuple[str, ...] = ()

    def address(self, host: str, port: int) -> str:
        """The checked address to connect to for `host`, or RefusedAddress."""
        addresses = self.resolver(host, port)
        if not addresses:
            raise RefusedAddress(f"The host {host} resolves to no address.")
        if self.allow_private or host.lower().strip("[]") in {name.lower() for name in self.allowed_hosts}:
            return addresses[0]
        for address in addresses:
            if not is_public(address):
                where = host if host == address else f"{host} ({address})"
                raise RefusedAddress(
                    f"Refused: {where} is a private, loopback, link-local or reserved address. Hearth's web tools "
                    "reach public addresses only, unless you allow more in Settings, Tools.")
        return addresses[0]


class GuardedBackend(httpcore2.NetworkBackend):
    """httpcore's network backend with every TCP connection checked by the guard and pinned to the checked
    address; TLS still verifies the certificate for the host name (httpcore passes it to start_tls)."""

    def __init__(self, guard: AddressGuard) -> None:
        self.guard = guard
        self._inner = httpcore2.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        try:
            address = self.guard.address(host, port)
        except RefusedAddress as error:
            raise httpcore2.ConnectError(str(error)) from error
        return self._inner.connect_tcp(address, port, timeout, local_address, socket_options)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        raise httpcore2.ConnectError("Hearth's web tools do not open local sockets.")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)

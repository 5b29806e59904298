"""The one seam for outbound HTTP to URLs people type (a cap's webhook today; Slack and Teams channels next).

`ingest/http.py` stays the seam for provider APIs: their base URLs are set by admins and may be internal on purpose
(a LiteLLM gateway on the private network). A URL a team lead types is different: the server would call whatever it
names, so it goes through this egress policy (docs/security.md, "Outbound requests to user-given URLs"):

- **Refused addresses.** The host is resolved once; if any address it resolves to is loopback, link-local (the cloud
  metadata address 169.254.169.254 among them), private (RFC 1918, RFC 6598), unique-local (fc00::/7), multicast,
  unspecified (0.0.0.0, ::) or otherwise reserved — IPv4-mapped and 6to4 IPv6 forms of them too — the request is
  refused and the message names the address and its class. An admin allows a network on purpose with
  `FINOPS_EGRESS_ALLOWED_NETWORKS` (comma-separated CIDRs).
- **No second lookup.** The connection is made to the vetted address; the Host header and, for https, TLS SNI and
  certificate verification use the original name, so a name that answers a public address to the check and a
  private one to the connect (DNS rebinding) reaches nothing. Environment proxies are not used.
- **No redirects.** A 3xx is the receiver's answer, never followed.
- **A hard deadline per attempt** (`FINOPS_EGRESS_DEADLINE_SECONDS`, 10 s): connect, send and the whole response
  (headers and up to 64 KiB of body) within it, measured on the wall clock, so a receiver trickling a byte at a time
  is cut at the deadline, not after every read's timeout.

`url_check` is the save-time check (every write path of a URL calls it through its service); `post` checks again at
send, because what a name resolves to may change between the two. At save a name that does not resolve *now* is
accepted (DNS may be down, the receiver not up yet): the send-time check is the one that holds.
"""

import base64
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from django.conf import settings

ALLOW_SETTING = "FINOPS_EGRESS_ALLOWED_NETWORKS"
BODY_LIMIT = 64 * 1024
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA = ipaddress.ip_address("169.254.169.254")
RFC1918 = [ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")]
SHARED = ipaddress.ip_network("100.64.0.0/10")  # RFC 6598, carrier-grade NAT: private in practice
UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
NAT64 = ipaddress.ip_network("64:ff9b::/96")  # an IPv4 address reached from IPv6: judged as that address


class EgressRefused(Exception):
    """The policy refuses this URL (its message says which rule); retrying cannot help until the URL or the
    allowed networks change."""


class EgressFailed(Exception):
    """The request was allowed but did not complete: unreachable, a TLS failure, or the deadline (`timed_out`)."""

    def __init__(self, message: str, *, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes


def url_label(url: str) -> str:
    """What may be shown of a URL: its scheme and host (and an explicit port), never credentials, path or query
    (a Slack-style URL is itself a secret); "/…" says a path was left out."""
    parts = urlsplit(url)
    try:
        host, port = parts.hostname or "", parts.port
    except ValueError:
        host, port = parts.hostname or "", None
    if ":" in host:
        host = f"[{host}]"
    shown = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
    return shown + "/…" if parts.path.strip("/") or parts.query else shown


def allowed_networks() -> list:
    return list(getattr(settings, ALLOW_SETTING, []) or [])


def forbidden_class(address: Address) -> str | None:
    """The class that makes `address` forbidden ("a loopback address"), or None for a public address."""
    if address.version == 6:
        nat64 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF) if address in NAT64 else None
        embedded = address.ipv4_mapped or address.sixtofour or nat64
        if embedded is not None:
            inner = forbidden_class(embedded)
            form = "IPv4-mapped" if address.ipv4_mapped else "6to4" if address.sixtofour else "NAT64"
            return f"the {form} form of {embedded}, {inner}" if inner else None
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address == METADATA:
        return "the cloud metadata address (link-local)"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address in UNIQUE_LOCAL:
        return "a unique-local address"
    if address.version == 4 and (any(address in net for net in RFC1918) or address in SHARED):
        return "a private address"
    if address.version == 6 and address.is_site_local:
        return "a site-local address (the former IPv6 private range)"
    if address.is_reserved or not address.is_global:
        return "a reserved address"
    return None


def _allowed(address: Address) -> bool:
    candidates = [address] + ([address.ipv4_mapped] if address.version == 6 and address.ipv4_mapped else [])
    return any(c in net for c in candidates for net in allowed_networks() if c.version == net.version)


def address_refusal(address: Address, *, literal: bool, host: str = "") -> str | None:
    """Why `address` is refused, in words for the person who typed the URL; None when it may be called."""
    rule = forbidden_class(address)
    if rule is None or _allowed(address):
        return None
    said = f"{address} is" if literal else f"{host} resolves to {address},"
    return f"{said} {rule}; an admin can allow a network with {ALLOW_SETTING}"


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # as written, without brackets
    port: int
    path: str  # path and query, as sent
    authorization: str | None  # Basic credentials from the URL's userinfo


def parse(url: str) -> Target:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise EgressRefused("Must be an http(s) URL.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise EgressRefused("The port is not a number between 0 and 65535.") from None
    if not parts.hostname:
        raise EgressRefused("The URL names no host.")
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode()).decode()
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, parts.hostname, port, path, authorization)


def _literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def resolve(target: Target) -> list[Address]:
    """Every address the host resolves to, each checked: one forbidden address refuses the URL (which one a
    connection would use is the resolver's choice, so all must pass). Raises socket.gaierror when it does not
    resolve."""
    literal = _literal(target.host)
    if literal is not None:
        found = [literal]
    else:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
        found = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos))
    for address in found:
        refusal = address_refusal(address, literal=literal is not None, host=target.host)
        if refusal:
            raise EgressRefused(refusal)
    return found


def url_check(url: str) -> None:
    """The save-time check: raises EgressRefused naming the rule. A name that does not resolve now is accepted."""
    target = parse(url)
    try:
        resolve(target)
    except socket.gaierror:
        return


def deadline_seconds() -> float:
    return float(getattr(settings, "FINOPS_EGRESS_DEADLINE_SECONDS", 10))


def post(url: str, *, body: bytes, headers: dict[str, str], deadline: float | None = None) -> Response:
    """POST `body` to `url` under the policy. Raises EgressRefused (policy) or EgressFailed (network, deadline)."""
    target = parse(url)
    limit = deadline_seconds() if deadline is None else deadline
    ends = time.monotonic() + limit
    try:
        addresses = resolve(target)
    except socket.gaierror:
        raise EgressFailed("unreachable: the host name does not resolve") from None
    headers = dict(headers)
    if target.authorization:
        headers.setdefault("Authorization", target.authorization)
    last_error: EgressFailed | None = None
    for address in addresses:
        try:
            return _attempt(target, address, body, headers, ends, limit)
        except EgressFailed as exc:
            if exc.timed_out:
                raise
            last_error = exc
    raise last_error


class _PinnedMixin:
    """Connects to the vetted address; `host` (the original name) stays in the Host header and, for https, in SNI
    and the certificate check."""

    pinned: Address
    ends: float

    def connect(self):
        remaining = self.ends - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        # A socket to the address itself: no resolver call at all between the check and the connect.
        family = socket.AF_INET6 if self.pinned.version == 6 else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.settimeout(remaining)
        try:
            self.sock.connect((str(self.pinned), self.port))
        except BaseException:
            self.sock.close()
            self.sock = None
            raise
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if isinstance(self, http.client.HTTPSConnection):
            self.sock = self._context.wrap_socket(self.sock, server_hostname=self.host)


class _PinnedHTTP(_PinnedMixin, http.client.HTTPConnection):
    pass


class _PinnedHTTPS(_PinnedMixin, http.client.HTTPSConnection):
    pass


def _attempt(target: Target, address: Address, body: bytes, headers: dict, ends: float, limit: float) -> Response:
    if target.scheme == "https":
        connection = _PinnedHTTPS(target.host, target.port, timeout=limit, context=ssl.create_default_context())
    else:
        connection = _PinnedHTTP(target.host, target.port, timeout=limit)
    connection.pinned, connection.ends = address, ends
    # The wall-clock deadline: socket timeouts bound each read, not the sum, so a watchdog shuts the socket down
    # when the attempt's time is up and the blocked read returns at once.
    watchdog = threading.Timer(max(0.0, ends - time.monotonic()), _cut, args=(connection,))
    watchdog.daemon = True
    watchdog.start()
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read(BODY_LIMIT)
        if time.monotonic() >= ends:
            raise TimeoutError
        return Response(response.status, data)
    except TimeoutError:
        raise EgressFailed(f"timed out after {limit:g} s", timed_out=True) from None
    except (OSError, http.client.HTTPException, ssl.SSLError) as exc:
        if time.monotonic() >= ends:
            raise EgressFailed(f"timed out after {limit:g} s", timed_out=True) from None
        raise EgressFailed(f"unreachable: {type(exc).__name__}") from None
    finally:
        watchdog.cancel()
        connection.close()


def _cut(connection: http.client.HTTPConnection) -> None:
    sock = connection.sock
    if sock is not None:
        try:
            # The plain socket's shutdown, also under TLS: SSLSocket.shutdown would drop its TLS state under the
            # reading thread's feet; this only ends the stream, and the blocked read sees its end.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass

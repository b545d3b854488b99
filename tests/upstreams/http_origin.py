"""A scripted HTTP/1.1 origin on 127.0.0.1 for client tests: it writes exact bytes, to show every framing case."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import anyio
import orjson
from anyio.abc import ByteStream, SocketAttribute
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.tls import TLSListener
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Seen:
    head: str
    body: bytes
    connection: int

    @property
    def ident(self) -> Any:
        return orjson.loads(self.body)["id"]


Answer = Callable[[Seen, ByteStream], Awaitable[bool]]
"""Writes the response to one request; False ends the connection."""


class Origin:
    """A scripted HTTP/1.1 server: it reads each request whole and lets ``answer`` respond."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[Seen] = []
        self.opened = 0
        self.ended = 0
        self.port = 0
        self._changed = anyio.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        while not predicate():
            await self._changed.wait()

    def _change(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def handle(self, stream: ByteStream) -> None:
        index = self.opened
        self.opened += 1
        self._change()
        buffered = BufferedByteReceiveStream(stream)
        try:
            while True:
                head = (await buffered.receive_until(b"\r\n\r\n", 1 << 16)).decode()
                lines = head.lower().split("\r\n")
                length = next((int(line.split(":")[1]) for line in lines if line.startswith("content-length")), 0)
                seen = Seen(head, await buffered.receive_exactly(length), index)
                self.requests.append(seen)
                self._change()
                if not await self.answer(seen, stream):
                    break
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            await anyio.aclose_forcefully(stream)
            self.ended += 1
            self._change()


@asynccontextmanager
async def serving(answer: Answer, *, tls: ssl.SSLContext | None = None) -> AsyncIterator[Origin]:
    origin = Origin(answer)
    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1")
    origin.port = tcp.extra(SocketAttribute.local_port)
    listener = TLSListener(tcp, tls, standard_compatible=False) if tls is not None else tcp
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, origin.handle)
        try:
            yield origin
        finally:
            tg.cancel_scope.cancel()


def response(body: bytes, *, status: str = "200 OK", kind: str = "application/json", extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    return head.encode() + body


def chunked_head(kind: str) -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


LAST_CHUNK = b"0\r\n\r\n"


def event(data: bytes) -> bytes:
    return b"event: message\r\ndata: " + data + b"\r\n\r\n"


def tls_files(directory: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate it signed for 127.0.0.1: (CA, certificate, key) PEM files."""
    now = datetime.now(UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mcp-aggregator test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = (directory / "ca.pem", directory / "cert.pem", directory / "key.pem")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths

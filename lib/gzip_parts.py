"""A gzip response assembled from parts, some compressed once and reused by every request.

A page whose bulk is the same for every viewer (a search's 1 MB tree) but whose frame is not
(the user's name, CSRF tokens) would otherwise be compressed whole on every load. Deflate allows
better: a part compressed alone and ended with a sync flush is a run of complete, byte-aligned
blocks whose back-references reach only into that part, so such runs can be laid end to end and
read as one stream. Only the gzip trailer covers the whole (CRC-32 and length), and CRC-32 can be
continued over the reused part without compressing it again."""

import re
import zlib
from dataclasses import dataclass

from django.http import HttpResponse
from django.utils.cache import patch_vary_headers

LEVEL = 6  # zlib's default, as Django's GZipMiddleware uses
_ACCEPTS_GZIP = re.compile(r"\bgzip\b")
# gzip member header: magic, deflate, no flags, no mtime, no extra flags, unknown OS.
_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


@dataclass(frozen=True)
class Compressed:
    """A part compressed once: raw deflate blocks ending on a sync flush, and the text's bytes for
    clients that take no gzip (and for the CRC)."""

    raw: bytes
    deflated: bytes

    @classmethod
    def of(cls, text: str) -> "Compressed":
        raw = text.encode()
        return cls(raw, _deflate(raw, zlib.Z_SYNC_FLUSH))


def _deflate(data: bytes, flush: int) -> bytes:
    compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush(flush)


def gzip_of(parts: list[bytes | Compressed]) -> bytes:
    """One gzip member holding the parts in order; plain bytes are compressed now."""
    body, crc, size = [_HEADER], 0, 0
    for part in parts:
        raw = part.raw if isinstance(part, Compressed) else part
        body.append(part.deflated if isinstance(part, Compressed) else _deflate(raw, zlib.Z_SYNC_FLUSH))
        crc, size = zlib.crc32(raw, crc), size + len(raw)
    body.append(_deflate(b"", zlib.Z_FINISH))  # the final, empty block
    body.append(crc.to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little"))
    return b"".join(body)


def respond(request, response: HttpResponse, marker: str, part: Compressed) -> HttpResponse:
    """`response` with `marker` (in its content once) replaced by `part`, gzipped when the client
    takes gzip, as GZipMiddleware would have sent it."""
    before, after = response.content.split(marker.encode(), 1)
    patch_vary_headers(response, ("Accept-Encoding",))
    if _ACCEPTS_GZIP.search(request.headers.get("Accept-Encoding", "")):
        response.content = gzip_of([before, part, after])
        response["Content-Encoding"] = "gzip"
    else:
        response.content = before + part.raw + after
    response["Content-Length"] = str(len(response.content))
    return response

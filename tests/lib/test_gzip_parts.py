"""Parts compressed apart and laid end to end read as one gzip stream, checked by Python's gzip
and zlib readers (a browser's inflate is zlib)."""

import gzip
import random
import zlib

from lib.gzip_parts import Compressed, gzip_of


def _text(rng: random.Random, n: int) -> str:
    words = ["<li class='node'>", "kernel", "✓ correct", "0.4123 ms", "</li>\n", "idea ", "×eager", "ü"]
    return "".join(rng.choice(words) for _ in range(n))


def test_parts_compressed_once_read_back_as_one_stream():
    rng = random.Random(7)
    for _ in range(50):
        pieces = [_text(rng, rng.randrange(0, 3000)) for _ in range(rng.randrange(1, 6))]
        parts = [Compressed.of(p) if rng.random() < 0.5 else p.encode() for p in pieces]
        body = gzip_of(parts)
        assert gzip.decompress(body) == "".join(pieces).encode()
        reader = zlib.decompressobj(16 + zlib.MAX_WBITS)  # streaming, with the trailer checked
        assert reader.decompress(body) + reader.flush() == "".join(pieces).encode() and reader.eof


def test_a_reused_part_is_not_compressed_again_and_stays_small():
    tree = Compressed.of("<li>kernel 0.41 ms ✓</li>\n" * 40_000)  # ~1 MB, as a 2,000-kernel tree
    body = gzip_of([b"<html>head", tree, b"tail</html>"])
    assert len(body) < len(tree.raw) / 20
    assert gzip.decompress(body).startswith(b"<html>head<li>")


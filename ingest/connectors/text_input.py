"""Reading untrusted export files with bounded work and memory (issue 15): every text reader goes through here.

- `utf8_text`: a binary stream as UTF-8 text, decoded incrementally by io.TextIOWrapper (linear in the input;
  codecs' StreamReader re-scans its buffer for every short read, which made one 16 MB line take 8 s).
- `bounded_lines`: the text's physical lines, refusing one longer than MAX_LINE_CHARS or holding a NUL byte, so
  a file of one endless line is refused after a megabyte instead of being held whole.
- `bounded_decompressed`: a gzip member's bytes, refused past MAX_DECOMPRESSED_BYTES or past MAX_RATIO times the
  compressed bytes read (a 1.9 MB file expanding to 2 GB is a bomb, not an export).
"""

import gzip
import io

from .base import ProviderError

# Far above any real export's line (a FOCUS line with its tags is a few kB; a LiteLLM record with stored
# messages can reach hundreds of kB), far below what hurts a worker.
MAX_LINE_CHARS = 4 << 20
MAX_DECOMPRESSED_BYTES = 32 << 30
MAX_RATIO = 200
RATIO_CHECK_AFTER = 64 << 20  # small files may compress better than MAX_RATIO (a header and a few repeated rows)


class _Raw(io.RawIOBase):
    """Any object with read() as a raw stream, so it can be buffered and decoded incrementally."""

    def __init__(self, stream):
        self._stream = stream

    def readable(self):
        return True

    def readinto(self, buffer):
        chunk = self._stream.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def utf8_text(stream) -> io.TextIOWrapper:
    """UTF-8 text (a BOM dropped), lines kept as written (newline="" as the csv module wants). The caller's stream
    is wrapped, never handed to the TextIOWrapper itself, which would close it when collected (a caller may read
    it again: a retry, a fallback reader)."""
    return io.TextIOWrapper(io.BufferedReader(_Raw(stream), 1 << 16), encoding="utf-8-sig", newline="")


def bounded_lines(text, file_name: str, *, limit: int = MAX_LINE_CHARS, first_line: int = 1):
    """The physical lines of `text`, each refused when longer than `limit` characters or holding a NUL byte."""
    number = first_line - 1
    while True:
        line = text.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit:
            raise ProviderError(
                f"{file_name} line {number}: longer than {limit:,} characters; not an export this product reads "
                "(a line of a usage export is a few kilobytes)"
            )
        if "\x00" in line:
            raise ProviderError(f"{file_name} line {number}: holds a NUL byte (a binary file, or a damaged export)")
        yield line


class bounded_decompressed(io.RawIOBase):
    """A gzip stream's decompressed bytes, refused when they grow past the size or ratio bounds."""

    def __init__(
        self,
        compressed,
        file_name: str,
        *,
        max_bytes: int = MAX_DECOMPRESSED_BYTES,
        max_ratio: int = MAX_RATIO,
        check_after: int = RATIO_CHECK_AFTER,
    ):
        self._source = _Counting(compressed)
        self._gzip = gzip.GzipFile(fileobj=self._source, mode="rb")
        self._file_name, self._max_bytes, self._max_ratio, self._check_after = (
            file_name,
            max_bytes,
            max_ratio,
            check_after,
        )
        self._out = 0

    def readable(self):
        return True

    def readinto(self, buffer):
        n = self._gzip.readinto(buffer)
        self._out += n
        if self._out > self._max_bytes:
            raise ProviderError(
                f"{self._file_name}: decompresses to more than {self._max_bytes >> 30} GiB; split the export"
            )
        if self._out > self._check_after and self._out > self._max_ratio * max(self._source.count, 1):
            raise ProviderError(
                f"{self._file_name}: {self._source.count:,} compressed bytes expand to over {self._out:,} "
                f"(more than {self._max_ratio}×): refused as a decompression bomb"
            )
        return n


class _Counting(io.RawIOBase):
    def __init__(self, stream):
        self._stream, self.count = stream, 0

    def readable(self):
        return True

    def readinto(self, buffer):
        chunk = self._stream.read(len(buffer))
        buffer[: len(chunk)] = chunk
        self.count += len(chunk)
        return len(chunk)

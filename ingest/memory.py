"""Memory an import has freed, handed back to the system (issue 23).

A gateway log is read whole before its lines are written (its hourly groups are complete only at the end of the
file): the reader's working set — Arrow's blocks and parsed metadata, numpy arrays of every batch — is freed when
it returns its few columns, but the allocators keep the pages (Arrow's mimalloc, glibc's heap), so the writer and
the rollups then allocated on top of them. A 1M-request busy-day log: 370–420 MB still resident after the read, and
the peak came from the rollup that followed it (5M / 1M requests: 1.2–1.36 between runs, the bench's target is
1.2). Returned after the read (~20 ms), the process holds ~220 MB and the peak is the read's own: 442 and 459 MB for
1M and 5M requests (docs/ingestion.md, session 20).
"""

import ctypes
import ctypes.util

import pyarrow as pa


def _malloc_trim():
    """glibc's malloc_trim (Linux), or None where the C library has none (macOS, musl)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _malloc_trim()


def freed_memory_release() -> None:
    """Hand the pages Arrow's pool and the C heap hold free back to the system."""
    pa.default_memory_pool().release_unused()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)

"""Counts per int64 code across a file's batches, for the gateway column reader's latency distributions
(ingest/connectors/gateway/columns.py: a code is (group * 2 + kind) * SLOTS + slot)."""

import numpy as np


class CodeCounts:
    """The codes met so far, sorted, with their counts. A batch's codes already known are added in place; codes of
    groups new in the batch (all at or above `fresh_from`) are appended; other new ones are kept aside and merged in
    when they pass `merge_at` and a quarter of the known ones. `codes` and `counts` are whole after `merge()`."""

    def __init__(self, merge_at: int):
        self.merge_at = merge_at
        self.codes = np.zeros(0, dtype=np.int64)  # sorted
        self.counts = np.zeros(0, dtype=np.int64)
        self.code_room, self.count_room = self.codes, self.counts  # what `codes` and `counts` view
        self.new: list[tuple[np.ndarray, np.ndarray]] = []  # codes not known yet, with their counts
        self.new_size = 0

    def add(self, codes: np.ndarray, *, fresh_from: int) -> None:
        """Count the batch's (group, kind, slot) codes: added in place to the codes already known (a sorted array),
        new ones kept aside and merged in when they reach a quarter of the known ones. New codes stop coming once
        every group's buckets have been seen, so the merges, and the memory they take, do not grow with the file."""
        if not len(codes):
            return
        unique, counts = np.unique(codes, return_counts=True)
        # Codes of groups new in this batch sort after every code known (groups are numbered as first met): they
        # are appended, not merged. A log in time order (a proxy's: each hour's groups new) merged nearly every
        # code it met, ~0.3 s of its reader's CPU at 1M.
        fresh = np.searchsorted(unique, fresh_from)
        if fresh < len(unique):
            self._append(unique[fresh:], counts[fresh:])
            unique, counts = unique[:fresh], counts[:fresh]
            if not len(unique):
                return
        at = np.searchsorted(self.codes, unique)
        found = at < len(self.codes)
        found[found] = self.codes[at[found]] == unique[found]
        self.counts[at[found]] += counts[found]
        if not found.all():
            self.new.append((unique[~found], counts[~found]))
            self.new_size += len(self.new[-1][0])
            if self.new_size > max(self.merge_at, len(self.codes) // 4):
                self.merge()

    def _append(self, codes: np.ndarray, counts: np.ndarray) -> None:
        """Codes above every known one, kept sorted in arrays grown by doubling (`codes` views their start)."""
        size, grow = len(self.codes), len(codes)
        if size + grow > len(self.code_room):
            room = np.zeros(2 * (size + grow), dtype=np.int64)
            room[:size] = self.codes
            counted = np.zeros(2 * (size + grow), dtype=np.int64)
            counted[:size] = self.counts
            self.code_room, self.count_room = room, counted
        self.code_room[size : size + grow] = codes
        self.count_room[size : size + grow] = counts
        self.codes, self.counts = self.code_room[: size + grow], self.count_room[: size + grow]

    def merge(self) -> None:
        """The codes kept aside, summed per code and put in their places among the known ones (sorted: a search
        and one insertion, not a sort of them all)."""
        if not self.new:
            return
        codes = np.concatenate([c for c, _ in self.new])
        counts = np.concatenate([k for _, k in self.new])
        self.new, self.new_size = [], 0
        order = np.argsort(codes, kind="stable")
        codes, counts = codes[order], counts[order]
        del order
        starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1])))
        codes, counts = codes[starts], np.add.reduceat(counts, starts)
        at = np.searchsorted(self.codes, codes)
        found = at < len(self.codes)
        found[found] = self.codes[at[found]] == codes[found]
        self.counts[at[found]] += counts[found]
        self.codes = np.insert(self.codes, at[~found], codes[~found])
        self.counts = np.insert(self.counts, at[~found], counts[~found])
        self.code_room, self.count_room = self.codes, self.counts

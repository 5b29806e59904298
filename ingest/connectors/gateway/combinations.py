"""The gateway column reader's combinations (gateway/columns.py): what a record's cells say — provider, model, tags,
cache hit, who sent it — read once per distinct combination of the cells that say it, and numbered, so that a
combination of them is a row of four numbers found in numpy, with no Python per record or per combination.

A log whose keys, users and teams do not come together (300 × 50 × 7 of them) has nearly a combination per
request: reading each one's cells as one record cost ~60 µs a request, pairing the identity's answer with the
rest's in Python ~8 µs. Here the cells but the identity ones are read per distinct combination by gateway_log's own
`_litellm_request` (with the identity cells empty), and each part of the identity (gateway_log.IDENTITY_PARTS: key,
user, team tag, alias tag) per distinct value of its own cells by its own `litellm_identity`, so the column reader
and the record reader cannot disagree on what a record names (tests/ingest/test_gateway_columns.py holds them to the
same lines, and the parts to the whole).
"""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.connectors.base import BatchDeclined as Declined

COMBO_BITS = 24  # combination ids: an hourly group is hour << COMBO_BITS | combination


class Combinations:
    """The combinations met in a log, across its batches: `of(cells, n)` numbers a batch's rows."""

    SEEN_AT_MOST = 1 << 17  # numbers kept of the combinations of cells met (`of`), past which they are forgotten
    NEW_AT_MOST = 0.5  # … the search skipped after a batch where more than this share of its rows were new …
    PROBE = 8  # … for this many batches (the first one included)

    def __init__(self, interpret_cells, named: list[str], meta_names: tuple, identify=None):
        """`interpret_cells(cells)`: gateway_log's reading of a record holding `cells` (`named` then `meta_names`);
        `identify`: (litellm_identity, its record cells, its metadata fields[, IDENTITY_PARTS])."""
        self.interpret_cells, self.width = interpret_cells, len(named) + len(meta_names)
        # Who sent a record (key, user, team) is read by `identify` from cells of its own; the rest of the record
        # by `interpret_cells` once per distinct combination of the other cells, with those cells empty (see `of`).
        # `identify` may name parts of its answer read from cells apart from the others' (gateway_log's
        # IDENTITY_PARTS): each part is read once per distinct value of its own cells.
        self.identify, identity_cells, identity_metadata, *parts = identify or (None, (), (), ())
        cells = [*named, *meta_names]
        present = [name for name in named if name in identity_cells]
        present += [name for name in meta_names if name in identity_metadata]
        self.identity_cells, self.identity_metadata = identity_cells, identity_metadata
        parts = [[c for c in part_cells if c in present] for _, part_cells in (parts[0] if parts else ())]
        parted = {c for part in parts for c in part}
        if set(present) - parted:  # no parts named (or cells of none): the cells left are one part
            parts.append([c for c in present if c not in parted])
        self.parts = [(part, [cells.index(c) for c in part]) for part in parts if part]
        identity_at = [cells.index(c) for c in present]
        self.rest_at = [i for i in range(len(cells)) if i not in identity_at]
        self.rest_answers: dict[tuple, tuple] = {}  # the other cells -> what they say (_rest)
        # Each part's cells -> (key, user, tags) ids (_part_answer); values numbered across batches (_id).
        self.part_answers: dict[tuple, tuple] = {}
        self.ids: dict = {"": 0, (): 1}
        self.values: list = ["", ()]
        self.merged_tags: dict[tuple, int] = {}  # (request tags id, the parts' tags ids) -> merged tags id
        # Combination id -> its (core, tags, key, user) numbers (`_id`; core: provider, model, cache hit); and the
        # combinations' mixes (_mix), sorted, with their ids.
        self.combo_rows = np.zeros((1024, 4), dtype=np.int64)
        self.combo_mixes = np.zeros(0, dtype=np.int64)
        self.combo_mix_ids = np.zeros(0, dtype=np.int64)
        # Each combination of a row's cells met (their numbers per column, mixed as _combo_ids mixes), sorted, with
        # its answer: a log repeats its combinations of cells (a proxy's ~400 a batch of 12k requests), and numbering
        # a batch's rows afresh (the parts, the rest, their tags: seven np.unique of every row) cost ~1 s of the
        # reader's ~6 s of CPU at 1M. Only rows of combinations not met yet are read (`_read`); the answers are the
        # same, in the same order (a known combination of cells adds no value, tag set or combination). Forgotten
        # past SEEN_AT_MOST numbers (a log whose `error` cells all differ): memory stays flat.
        self._forget_seen()
        self.skip = 0  # batches left before combinations of cells are searched again

    def rows(self) -> np.ndarray:
        """Each combination's (core, tags, key, user) numbers, in id order (a copy)."""
        return self.combo_rows[: len(self.combo_mix_ids)].copy()

    def of(self, cells: list, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row: its combination's id, whether its model is empty, whether it failed. The cells a record's
        interpretation reads are numbered in numpy — who sent it (each identity part's cells) apart from the rest —
        each distinct combination of either read once by gateway_log itself, and what they say numbered (`_id`):
        a combination is then a row of four numbers (provider-model-cache hit, tags, key, user), the tags of both
        merged per distinct pair of tag sets. A log whose keys, users and teams do not come together has a
        combination per request, and reading each one's cells as one record was ~60 µs a request; each pairing of
        the parts' answers in Python still ~8 µs."""
        values = [_encoded(cell, n) for cell in cells]
        if self.skip:  # most rows' combinations were new a batch ago (a scattered log): the search would not pay
            self.skip -= 1
            return self._read(values)
        if sum(map(len, self.cell_numbers)) + len(self.seen_mixes) > self.SEEN_AT_MOST:
            self._forget_seen()
        numbers = np.stack(
            [self._cell_numbers(column, indices, dictionary) for column, (indices, dictionary) in enumerate(values)],
            axis=1,
        )
        mixed = _mix(numbers)
        at = np.searchsorted(self.seen_mixes, mixed)
        found = at < len(self.seen_mixes)
        found[found] = self.seen_mixes[at[found]] == mixed[found]
        answers = np.empty((n, 3), dtype=np.int64)  # combination id, model empty, failed
        if found.any():
            seen = at[found]
            if not (self.seen_cells[seen] == numbers[found]).all():
                raise Declined("two combinations of cells share a mix: the row reader reads the file")
            answers[found] = self.seen_answers[seen]
        missed = np.flatnonzero(~found)
        if len(missed):
            unique, first, inverse = np.unique(mixed[missed], return_index=True, return_inverse=True)
            inverse = inverse.reshape(-1)
            one = missed[first]  # a row of each new combination of cells
            if not (numbers[one][inverse] == numbers[missed]).all():
                raise Declined("two combinations of cells share a mix: the row reader reads the file")
            combo, model_empty, failed = self._read([(indices[one], dictionary) for indices, dictionary in values])
            new = np.stack([combo, model_empty, failed], axis=1).astype(np.int64)
            answers[missed] = new[inverse]
            if len(missed) > self.NEW_AT_MOST * n:
                self.skip = self.PROBE - 1
            where = np.searchsorted(self.seen_mixes, unique)
            self.seen_mixes = np.insert(self.seen_mixes, where, unique)
            self.seen_cells = np.insert(self.seen_cells, where, numbers[one], axis=0)
            self.seen_answers = np.insert(self.seen_answers, where, new, axis=0)
        return answers[:, 0], answers[:, 1].astype(bool), answers[:, 2].astype(bool)

    def _cell_numbers(self, column: int, indices: np.ndarray, dictionary: list) -> np.ndarray:
        """Per row, the number of its cell in `column`, the same in every batch (until _forget_seen)."""
        numbers = self.cell_numbers[column]
        known = [numbers.get(value) for value in dictionary]
        if None in known:
            for at, value in enumerate(dictionary):
                if known[at] is None:
                    known[at] = numbers[value] = len(numbers)
        return np.array(known, dtype=np.int64)[indices]

    def _forget_seen(self) -> None:
        self.cell_numbers = [{} for _ in range(self.width)]
        self.seen_mixes = np.zeros(0, dtype=np.int64)
        self.seen_cells = np.zeros((0, self.width), dtype=np.int64)
        self.seen_answers = np.zeros((0, 3), dtype=np.int64)

    def _read(self, values: list[tuple[np.ndarray, list]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`of` for rows whose combination of cells has not been seen (`values` as _encoded gives them)."""
        n = len(values[0][0]) if values else 0
        rest_of, rest_rows = _numbered([values[at] for at in self.rest_at], n)
        rests = np.array(
            [self._rest(list(rest)) for rest in _cells_of([values[at] for at in self.rest_at], rest_rows)],
            dtype=np.int64,
        ).reshape(len(rest_rows), 6)[rest_of]  # core, tags, key, user, model empty, failed
        core, tags, key, user = rests[:, 0], rests[:, 1], rests[:, 2], rests[:, 3]
        part_tags = []
        for names, at in self.parts:
            part_of, part_rows = _numbered([values[i] for i in at], n)
            # The cache looked up here, _part_answer called on a miss only: a proxy's batch meets ~400 combinations
            # of each part's cells, 4 parts, and a call per combination cost ~0.4 s of the reader's ~7 s at 1M.
            known, number = self.part_answers.get, id(names)
            answers = np.array(
                [
                    known((number, part)) or self._part_answer(names, part)
                    for part in _cells_of([values[i] for i in at], part_rows)
                ],
                dtype=np.int64,
            ).reshape(len(part_rows), 3)[part_of]  # key, user, tags
            key, user = _one_of(key, answers[:, 0]), _one_of(user, answers[:, 1])
            part_tags.append(answers[:, 2])
        if part_tags:
            tags = self._merged_tags(np.stack([tags, *part_tags], axis=1))
        combo = self._combo_ids(np.stack([core, tags, key, user], axis=1))
        return combo, rests[:, 4].astype(bool), rests[:, 5].astype(bool)

    def _combo_ids(self, rows: np.ndarray) -> np.ndarray:
        """Per row of (core, tags, key, user) numbers, its combination's id, new ones numbered as first met: found
        by a 64-bit mix of the four numbers in a sorted array (as _groups finds groups), each found or new
        combination compared whole with the rows it stands for (a mix shared by two combinations declines the
        file, never merges them)."""
        mixed = _mix(rows)
        unique, first, inverse = np.unique(mixed, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        if not (rows[first][inverse] == rows).all():
            raise Declined("two key, user and tag combinations share a mix: the row reader reads the file")
        at = np.searchsorted(self.combo_mixes, unique)
        found = at < len(self.combo_mixes)
        found[found] = self.combo_mixes[at[found]] == unique[found]
        ids = np.empty(len(unique), dtype=np.int64)
        ids[found] = self.combo_mix_ids[at[found]]
        if found.any() and not (self.combo_rows[ids[found]] == rows[first[found]]).all():
            raise Declined("two key, user and tag combinations share a mix: the row reader reads the file")
        new = np.flatnonzero(~found)
        if len(new):
            count = len(self.combo_mix_ids)
            if count + len(new) > 1 << COMBO_BITS:
                raise Declined("too many distinct key, user and tag combinations")
            ids[new] = np.arange(count, count + len(new))
            if count + len(new) > len(self.combo_rows):
                grown = np.zeros((2 * (count + len(new)), 4), dtype=np.int64)
                grown[:count] = self.combo_rows[:count]
                self.combo_rows = grown
            self.combo_rows[count : count + len(new)] = rows[first[new]]
            known = np.concatenate([self.combo_mixes, unique[new]])
            order = np.argsort(known, kind="stable")
            self.combo_mixes, self.combo_mix_ids = known[order], np.concatenate([self.combo_mix_ids, ids[new]])[order]
        return ids[inverse]

    def _id(self, value) -> int:
        """The number of a value a record's cells say (a key, a user, a tag set as sorted items, …), the same in every
        batch: combinations are compared as numbers."""
        number = self.ids.get(value)
        if number is None:
            number = self.ids[value] = len(self.values)
            self.values.append(value)
        return number

    def _rest(self, rest: list) -> tuple:
        """(provider-model-cache hit, sorted tags, key, user, model empty, failed) as numbers (`_id`) of the cells but
        the identity ones, read by `interpret_cells` with the identity cells empty (its answer for them is then no
        key, no user, no tags). Without `identify` there are no identity cells apart: the key and user are the
        request's own."""
        key = tuple(rest)
        known = self.rest_answers.get(key)
        if known is None:
            cells = [""] * self.width
            for at, cell in zip(self.rest_at, rest):
                cells[at] = cell
            request = self.interpret_cells(cells)
            known = (
                self._id((request.provider, request.model, request.cache_hit)),
                self._id(tuple(sorted(request.tags.items()))),
                self._id(request.api_key),
                self._id(request.user),
                not request.model,
                request.failed,
            )
            if len(self.rest_answers) >= 65536:
                self.rest_answers.clear()
            self.rest_answers[key] = known
        return known

    def _part_answer(self, names: list, cells: tuple) -> tuple:
        """(api key, user, tags as sorted items), as numbers (`_id`), that `identify` reads from one part's cells,
        every other identity cell empty — what _litellm_request reads from those cells, by its own function."""
        known = self.part_answers.get((id(names), cells))
        if known is None:
            record = dict.fromkeys(self.identity_cells, "")
            metadata = {}
            for name, cell in zip(names, cells):
                if name in self.identity_metadata:
                    if cell:
                        metadata[name] = cell
                else:
                    record[name] = cell
            api_key, user, tags = self.identify(*record.values(), metadata)  # identity_cells' order
            known = (self._id(api_key), self._id(user), self._id(tuple(sorted(tags.items()))))
            if len(self.part_answers) >= 65536:
                self.part_answers.clear()
            self.part_answers[(id(names), cells)] = known
        return known

    def _merged_tags(self, pairs: np.ndarray) -> np.ndarray:
        """Per row, the number of its tags: the request's (first column) under the identity parts' (team_id,
        key_alias over any request tag of those names, as _litellm_request does), sorted; found per distinct row."""
        _, first, of = np.unique(_mix(pairs), return_index=True, return_inverse=True)
        of = of.reshape(-1)
        distinct = pairs[first]
        if not (distinct[of] == pairs).all():  # np.unique(axis=0) sorts rows as bytes: ~30× slower
            raise Declined("two tag combinations share a mix: the row reader reads the file")
        merged, values = [], self.values
        for row in map(tuple, distinct.tolist()):
            number = self.merged_tags.get(row)
            if number is None:
                both: dict = {}
                for tags in row:
                    both.update(values[tags])
                number = self.merged_tags[row] = self._id(tuple(sorted(both.items())))
            merged.append(number)
        return np.array(merged, dtype=np.int64)[of]


# --- columns ---


def _encoded(part: pa.Array | None, n: int) -> tuple[np.ndarray, list]:
    """(per row, the index of its value; the distinct values): nulls read as "", a missing column as all ""."""
    if part is None or part.null_count == n:  # a metadata field no record of the batch has
        return np.zeros(n, dtype=np.int64), [""]
    if isinstance(part, pa.DictionaryArray) and not part.null_count:  # a CSV cell (columns.NAMED), numbered by Arrow
        return part.indices.to_numpy(zero_copy_only=False), part.dictionary.to_pylist()
    encoded = pc.dictionary_encode(part.fill_null("") if part.null_count else part)
    return encoded.indices.to_numpy(zero_copy_only=False), encoded.dictionary.to_pylist()


def _cells_of(parts: list[tuple[np.ndarray, list]], rows: list[int]) -> list[tuple]:
    """The cells of each of `rows` (`parts` as _encoded gives them), as tuples: a column at a time, not a cell."""
    if not parts:
        return [()] * len(rows)
    at = np.array(rows, dtype=np.int64)
    return list(zip(*([values[i] for i in indices[at].tolist()] for indices, values in parts)))


def _numbered(parts: list[tuple[np.ndarray, list]], n: int) -> tuple[np.ndarray, list[int]]:
    """(per row, the number of its combination of `parts`' values, 0…k−1; a row of each combination): `parts` as
    _encoded gives them."""
    combined = np.zeros(n, dtype=np.int64)
    for indices, dictionary in parts:
        if len(dictionary) > 1:
            combined = combined * len(dictionary) + indices
            if combined.max() >= 1 << 40:  # keep the product small: renumber densely
                combined = np.unique(combined, return_inverse=True)[1].reshape(-1)
    _, first, number = np.unique(combined, return_index=True, return_inverse=True)
    return number.reshape(-1), first.tolist()


_MIX = np.array([(0x9E3779B97F4A7C15 * (2 * i + 1)) % (1 << 64) | 1 for i in range(32)], dtype=np.uint64)  # odd


def _mix(rows: np.ndarray) -> np.ndarray:
    """A 64-bit mix of each row's numbers (up to 32; multiply by odd constants, xor-shift): equal rows mix equally;
    the callers check that different ones they meet do not."""
    if rows.shape[1] > len(_MIX):
        raise ValueError("_mix: too many columns")
    with np.errstate(over="ignore"):
        mixed = np.zeros(len(rows), dtype=np.uint64)
        for column, factor in zip(rows.T.astype(np.uint64), _MIX):
            mixed = (mixed ^ column) * factor
            mixed ^= mixed >> np.uint64(29)
    return mixed.view(np.int64)


def combo_tuples(rows: np.ndarray, values: list) -> list[tuple]:
    """(provider, model, api key, user, sorted tag items, cache hit) of each combination's numbers (GatewayLines)."""
    combos = []
    for core, tags, key, user in rows.tolist():
        provider, model, cache_hit = values[core]
        combos.append((provider, model, values[key], values[user], values[tags], cache_hit))
    return combos


def _one_of(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Per row, the value (a number, 0 standing for "") that one of two parts gives: identity parts each say one
    thing (gateway_log.IDENTITY_PARTS); two saying the same thing is a mistake in them, not a record to read."""
    if ((first != 0) & (second != 0)).any():
        raise ValueError("two identity parts give the same answer: IDENTITY_PARTS is wrong")
    return np.maximum(first, second)

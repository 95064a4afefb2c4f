"""A compact map from (kind code, item id) to a non-negative int, for in-memory indexes.

Item ids are dense per kind (SQLite rowids), so a numpy column per kind indexed by id costs
8 bytes an id, where a dict of Python ints costs ~110 bytes an entry (11.6 MB at 100k items,
growing with them). An id far beyond the items held (an imported row with a huge id) goes to a
small dict instead, so one odd id never allocates a huge column.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

_ABSENT = -1
# A column grows to cover an id only while it stays at least this dense (ids per item held).
_MAX_SPREAD = 4
_MIN_COLUMN = 1024


class IdMap:
    def __init__(self) -> None:
        self._columns: dict[int, npt.NDArray[np.int64]] = {}
        self._sparse: dict[tuple[int, int], int] = {}
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def get(self, code: int, item_id: int) -> int | None:
        column = self._columns.get(code)
        if column is not None and 0 <= item_id < len(column):
            value = int(column[item_id])
            return None if value == _ABSENT else value
        return self._sparse.get((code, item_id))

    def set(self, code: int, item_id: int, value: int) -> None:
        if value < 0:
            raise ValueError("IdMap holds non-negative values")
        column = self._column_for(code, item_id)
        if column is None:
            if (code, item_id) not in self._sparse:
                self._count += 1
            self._sparse[(code, item_id)] = value
            return
        if column[item_id] == _ABSENT:
            self._count += 1
        column[item_id] = value

    def pop(self, code: int, item_id: int) -> int | None:
        column = self._columns.get(code)
        if column is not None and 0 <= item_id < len(column):
            value = int(column[item_id])
            if value == _ABSENT:
                return None
            column[item_id] = _ABSENT
            self._count -= 1
            return value
        value_or_none = self._sparse.pop((code, item_id), None)
        if value_or_none is not None:
            self._count -= 1
        return value_or_none

    def _column_for(self, code: int, item_id: int) -> npt.NDArray[np.int64] | None:
        if item_id < 0:
            return None
        column = self._columns.get(code)
        size = 0 if column is None else len(column)
        if item_id < size:
            assert column is not None
            return column
        if item_id >= max(_MIN_COLUMN, _MAX_SPREAD * (self._count + 1)):
            return None
        grown = np.full(max(_MIN_COLUMN, item_id + 1, 2 * size), _ABSENT, np.int64)
        if column is not None:
            grown[:size] = column
        self._columns[code] = grown
        # Entries held sparsely that the column now covers move into it.
        for key in [k for k in self._sparse if k[0] == code and k[1] < len(grown)]:
            grown[key[1]] = self._sparse.pop(key)
        return grown

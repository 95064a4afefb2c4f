"""IdMap behaves as a dict of (kind code, id) -> value, without huge columns for odd ids."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from worker.retrieval.idmap import IdMap

KEYS = st.tuples(st.integers(1, 4), st.one_of(st.integers(0, 3000), st.integers(0, 10**15)))
OPS = st.lists(
    st.tuples(st.sampled_from(["set", "pop", "get"]), KEYS, st.integers(0, 2**40)), max_size=300
)


@settings(max_examples=examples(150), deadline=None)
@given(OPS)
def test_acts_like_a_dict(ops: list[tuple[str, tuple[int, int], int]]) -> None:
    ids, model = IdMap(), {}
    for op, (code, item_id), value in ops:
        if op == "set":
            ids.set(code, item_id, value)
            model[(code, item_id)] = value
        elif op == "pop":
            assert ids.pop(code, item_id) == model.pop((code, item_id), None)
        else:
            assert ids.get(code, item_id) == model.get((code, item_id))
        assert len(ids) == len(model)
    for (code, item_id), value in model.items():
        assert ids.get(code, item_id) == value


def test_dense_ids_live_in_columns_and_a_huge_id_does_not_allocate_one() -> None:
    ids = IdMap()
    for i in range(1, 50_001):
        ids.set(1, i, i * 2)
    ids.set(1, 10**15, 7)
    ids.set(2, 10**12, 8)
    assert ids.get(1, 10**15) == 7 and ids.get(2, 10**12) == 8 and ids.get(1, 49_999) == 99_998
    assert sum(c.nbytes for c in ids._columns.values()) < 2_000_000
    assert len(ids._sparse) == 2

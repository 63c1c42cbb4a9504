"""StepIndex: the Numba build equals the reference numpy build, in int32; saved beside the
graph and read back memory-mapped by the next process; a damaged copy is rebuilt."""

import json
import logging

import numpy as np
import pytest

from lokg.kg import KnowledgeGraph
from lokg.kg.inverse_edges import add_inverse_edges
from lokg.kg.steps import StepIndex, build_steps, build_steps_reference


def _random_kg(seed: int, n: int = 40, r: int = 6, t: int = 300) -> KnowledgeGraph:
    """A multigraph with hubs, self-loops, parallel edges and isolated nodes (ids >= n - 5)."""
    rng = np.random.default_rng(seed)
    heads = np.minimum(rng.zipf(1.6, t) - 1, n - 6)  # hubs at the low ids
    tails = rng.integers(0, n - 5, t)
    rels = rng.integers(0, r, t)
    tri = np.stack([heads, rels, tails], 1)
    tri[:10, 2] = tri[:10, 0]  # self-loops
    tri = np.concatenate([tri, tri[20:30]])  # parallel copies of ten triples
    return KnowledgeGraph.from_ids(tri, n, r)


def _hand_kg() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(
        [("a", "r1", "b"), ("a", "r0", "c"), ("b", "r1", "a"), ("a", "r1", "a"), ("c", "r0", "a")]
    )


@pytest.mark.parametrize("both", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numba_build_equals_reference_build(seed, both):
    kg = _random_kg(seed)
    fast, ref = build_steps(kg, both), build_steps_reference(kg, both)
    assert fast.equals(ref)
    assert fast.triple.dtype == fast.far.dtype == fast.order.dtype == np.int32
    assert fast.relation.dtype == fast.group_relation.dtype == np.int32
    assert fast.ptr.dtype == fast.group_start.dtype == np.int64
    assert fast.num_steps == kg.num_triples * (2 if both else 1)


def test_numba_build_equals_reference_on_the_hand_graph_and_an_empty_one():
    kg = _hand_kg()
    assert build_steps(kg, True).equals(build_steps_reference(kg, True))
    a = kg.entities["a"]
    ix = build_steps(kg, True)
    assert ix.order[ix.ptr[a] : ix.ptr[a + 1]].tolist() == [1, 0, 2, 5, 3, 4]  # test_graph's
    empty = KnowledgeGraph.from_ids(np.zeros((0, 3), np.int64), 3, 2)
    e = build_steps(empty, True)
    assert e.equals(build_steps_reference(empty, True))
    assert e.ptr.tolist() == [0, 0, 0, 0] and e.group_start.tolist() == [0]


def test_step_relations_with_inverse_edges_equal_reference():
    kg = add_inverse_edges(_random_kg(3), [0, 2, 5])
    for both in (True, False):
        assert build_steps(kg, both).equals(build_steps_reference(kg, both))


def test_saved_index_round_trips_memory_mapped_and_checks_graph_and_setting(tmp_path):
    kg = _random_kg(4)
    ix = build_steps(kg, True)
    ix.save(tmp_path / "s", True, "abc")
    back = StepIndex.load(tmp_path / "s", True, "abc")
    assert back is not None and back.equals(ix)
    assert isinstance(back.triple, np.memmap)
    assert StepIndex.load(tmp_path / "s", True, "other graph") is None
    assert StepIndex.load(tmp_path / "s", False, "abc") is None
    assert StepIndex.load(tmp_path / "none", True, "abc") is None


def test_graph_saves_its_step_index_once_and_the_next_process_maps_it(tmp_path):
    kg = _random_kg(5)
    kg.save(tmp_path / "kg")
    first = KnowledgeGraph.load(tmp_path / "kg", mmap=True)
    built = first.steps_by_relation(True)
    assert (tmp_path / "kg" / "steps-both" / "steps.json").is_file()
    assert not isinstance(built.triple, np.memmap)  # built here, then written
    again = KnowledgeGraph.load(tmp_path / "kg", mmap=True)  # the next process
    read = again.steps_by_relation(True)
    assert isinstance(read.triple, np.memmap) and read.equals(built)
    assert read.equals(build_steps_reference(kg, True))
    assert again.steps_by_relation(False).equals(build_steps_reference(kg, False))
    assert (tmp_path / "kg" / "steps-out").is_dir()
    # the graph's own manifest check still passes with the step index beside it
    KnowledgeGraph.load(tmp_path / "kg", mmap=True)


def test_only_a_graph_read_from_its_directory_writes_its_index_there(tmp_path):
    kg = _random_kg(6)
    kg.save(tmp_path / "kg")  # save's directory may be a temporary one, renamed after
    kg.steps_by_relation(True)
    assert not (tmp_path / "kg" / "steps-both").exists()
    kg.save(tmp_path / "again")  # an index built before save is written beside the graph
    back = KnowledgeGraph.load(tmp_path / "again", mmap=True).steps_by_relation(True)
    assert isinstance(back.triple, np.memmap) and back.equals(build_steps_reference(kg, True))
    KnowledgeGraph.load(tmp_path / "kg").steps_by_relation(True)
    meta = json.loads((tmp_path / "kg" / "steps-both" / "steps.json").read_text())
    assert meta["fingerprint"] == kg.fingerprint() and meta["both_directions"] is True


def test_a_graph_whose_directory_is_gone_keeps_its_index_in_memory(tmp_path, caplog):
    kg = _random_kg(9)
    kg.save(tmp_path / "kg")
    loaded = KnowledgeGraph.load(tmp_path / "kg")  # arrays read into memory
    (tmp_path / "kg").rename(tmp_path / "moved")
    with caplog.at_level(logging.WARNING, logger="lokg.kg.graph"):
        ix = loaded.steps_by_relation(True)
    assert ix.equals(build_steps_reference(kg, True))
    assert not (tmp_path / "kg").exists()  # nothing half-written left behind
    assert any("kept in memory" in r.getMessage() for r in caplog.records)


def test_own_part_index_is_saved_apart_from_the_whole_graphs(tmp_path):
    kg = add_inverse_edges(_random_kg(7), [1, 3])
    kg.save(tmp_path / "kg")
    loaded = KnowledgeGraph.load(tmp_path / "kg", mmap=True)
    own = loaded.own_part()
    ix = own.steps_by_relation(True)
    assert (tmp_path / "kg" / "own-steps-both").is_dir()
    assert ix.equals(build_steps_reference(own, True))
    assert loaded.steps_by_relation(True).num_steps == 2 * kg.num_triples
    assert own.num_triples < kg.num_triples and ix.num_steps == 2 * own.num_triples


def test_a_damaged_saved_index_is_rebuilt_with_one_warning(tmp_path, caplog):
    kg = _random_kg(8)
    kg.save(tmp_path / "kg")
    KnowledgeGraph.load(tmp_path / "kg").steps_by_relation(True)
    far = tmp_path / "kg" / "steps-both" / "far.npy"
    far.write_bytes(far.read_bytes()[:-8])  # truncated
    with caplog.at_level(logging.WARNING, logger="lokg.kg.graph"):
        ix = KnowledgeGraph.load(tmp_path / "kg", mmap=True).steps_by_relation(True)
    assert ix.equals(build_steps_reference(kg, True))
    assert sum("step index is rebuilt" in r.getMessage() for r in caplog.records) == 1
    again = KnowledgeGraph.load(tmp_path / "kg", mmap=True).steps_by_relation(True)
    assert isinstance(again.far, np.memmap)  # the rebuilt copy was saved over it

"""The mapped BM25 file (knowledge.retrieval.bm25_file): same results as the built index, shared pages, locks."""

from __future__ import annotations

import pickle
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from knowledge.retrieval.bm25 import BM25Index, IndexFormatError
from knowledge.retrieval.bm25_file import MachineCopies, map_index_file, write_index_file

ROOT = Path(__file__).resolve().parents[3]


def synthetic(n_docs: int, seed: int = 7) -> BM25Index:
    rng = random.Random(seed)
    vocab = [f"词{i}" for i in range(3000)] + ["a", "ab", "b", "é", "知库"]
    return BM25Index.build((i * 3 + 11, [rng.choice(vocab) for _ in range(rng.randint(0, 40))]) for i in range(n_docs))


def test_the_mapped_index_gives_the_built_index_s_top_10_and_scores_on_real_passages(cmrc, tmp_path):
    docs, queries = cmrc
    built = BM25Index.build(enumerate(docs))
    write_index_file(built, tmp_path / "i.bm25")
    mapped = map_index_file(tmp_path / "i.bm25")
    assert isinstance(mapped.state_arrays()["cols"], np.memmap) or isinstance(mapped.state_arrays()["cols"].base, np.memmap)
    for q in queries:
        assert mapped.search(q, 10) == built.search(q, 10)
        assert np.array_equal(mapped.scores_for(q), built.scores_for(q))  # bit for bit, not approximately
        assert mapped.query_idf_sum(q) == built.query_idf_sum(q)
        assert mapped.matched_tokens(3, q) == built.matched_tokens(3, q)
    allowed = set(range(0, 300, 3))
    assert mapped.search(queries[0], 10, allowed_ids=allowed) == built.search(queries[0], 10, allowed_ids=allowed)
    shape = ("n_docs", "n_terms", "avgdl", "average_idf")
    assert [getattr(mapped, name) for name in shape] == [getattr(built, name) for name in shape]
    assert mapped.to_bytes() == built.to_bytes()  # the L2/L3 blob made from the mapped copy is the same


def test_an_update_of_the_mapped_index_equals_the_update_of_the_built_one(cmrc, tmp_path):
    docs, queries = cmrc
    built = BM25Index.build(enumerate(docs[:250]))
    write_index_file(built, tmp_path / "i.bm25")
    mapped = map_index_file(tmp_path / "i.bm25")
    change = {"remove_ids": [0, 5, 17, 5000], "add_docs": [(i, docs[i]) for i in range(250, 300)] + [(5, ["独角兽"])]}
    a, b = built.with_changes(**change), mapped.with_changes(**change)
    fresh = BM25Index.build([(i, docs[i]) for i in range(1, 250) if i not in (5, 17)] + change["add_docs"])
    for q in queries[:20] + [["独角兽"]]:
        assert a.search(q, 10) == b.search(q, 10) == fresh.search(q, 10)
    assert 5 in b and 0 not in b and 299 in b


def test_the_term_table_finds_every_term_and_no_other():
    index = synthetic(400)
    path = Path(__import__("tempfile").mkdtemp()) / "t.bm25"
    write_index_file(index, path)
    terms = map_index_file(path).terms
    listed = index.terms.as_list()
    assert terms.as_list() == listed and len(terms) == len(listed)
    assert all(terms.row(t) == index.terms.row(t) for t in listed)
    assert [terms.row(t) for t in ("", "词", "词99999", "c", "知")] == [None] * 5


def test_an_empty_index_maps(tmp_path):
    write_index_file(BM25Index.build([]), tmp_path / "e.bm25")
    empty = map_index_file(tmp_path / "e.bm25")
    assert (len(empty), empty.n_terms, empty.search(["a"], 3), 1 in empty) == (0, 0, [], False)


def test_mapping_never_unpickles(tmp_path, monkeypatch):
    index = synthetic(50)
    write_index_file(index, tmp_path / "i.bm25")
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: pytest.fail("unpickling"))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("unpickling"))
    term = index.terms.as_list()[0]
    assert map_index_file(tmp_path / "i.bm25").search([term], 2) == index.search([term], 2) != []


@pytest.mark.parametrize("damage", ["truncate", "magic", "header", "empty"])
def test_a_damaged_file_raises_and_the_machine_copy_is_dropped(tmp_path, damage):
    copies = MachineCopies(tmp_path, "ns")
    path = copies.publish(synthetic(200), "kb1-0", 1, "f" * 64)
    data = path.read_bytes()
    damaged = {"truncate": data[: len(data) // 2], "magic": b"XXXXXXXX" + data[8:],
               "header": data[:16] + b"{" * 40 + data[56:], "empty": b""}[damage]
    path.write_bytes(damaged)
    with pytest.raises(IndexFormatError):
        map_index_file(path)
    assert copies.open(path) is None and not path.exists()


def test_publishing_a_version_removes_the_older_ones_only(tmp_path):
    copies = MachineCopies(tmp_path, "zhiku:abc")
    index = synthetic(30)
    old = copies.publish(index, "kb1-0", 3, "f" * 64)
    newer = copies.publish(index, "kb1-0", 5, "f" * 64)
    assert not old.exists() and newer.exists()
    again = copies.publish(index, "kb1-0", 4, "f" * 64)  # a slow process publishing a version already replaced
    assert newer.exists() and again.exists()
    assert copies.publish(index, "kb1-0", 5, "e" * 64).exists() and not newer.exists()  # another analyzer, same version
    assert not list(copies.folder("kb1-0").glob(".tmp-*"))


def test_the_build_lock_keeps_out_another_process_of_the_machine(tmp_path):
    copies = MachineCopies(tmp_path, "ns")
    other = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from knowledge.retrieval.bm25_file import MachineCopies
        with MachineCopies({str(tmp_path)!r}, "ns").lock("kb1-0", 0.2) as held:
            print(held)
    """)
    with copies.lock("kb1-0", None) as held:
        assert held is True
        busy = subprocess.run([sys.executable, "-c", other], capture_output=True, text=True, check=True)
    free = subprocess.run([sys.executable, "-c", other], capture_output=True, text=True, check=True)
    assert (busy.stdout.strip(), free.stdout.strip()) == ("False", "True")


WORKER = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    from knowledge.retrieval.bm25_file import map_index_file
    index = map_index_file(sys.argv[2])
    for t in index.terms.as_list()[:200]:
        index.search([t, "a"], 10)
    state = index.state_arrays()
    touched = sum(float(np.asarray(a, dtype=np.float64).sum()) for a in state.values())  # every page of the file
    print("ready", touched, flush=True)
    sys.stdin.readline()
""")


def _mapping_of(pid: int, path: Path) -> dict[str, int]:
    """kB figures of the process's mapping of ``path`` (/proc/<pid>/smaps), summed over its ranges."""
    figures: dict[str, int] = {}
    inside = False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
            inside = len(fields) >= 6 and fields[-1] == str(path)
        elif inside and fields and fields[0].endswith(":") and len(fields) >= 2 and fields[1].isdigit():
            figures[fields[0][:-1]] = figures.get(fields[0][:-1], 0) + int(fields[1])
    return figures


def _rollup(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split(":", 1)
        out[key] = int(value.split()[0])
    return out


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs Linux /proc/<pid>/smaps")
def test_worker_processes_share_the_index_pages_instead_of_holding_copies(tmp_path):
    index = synthetic(40_000)
    path = tmp_path / "kb.bm25"
    size_kb = write_index_file(index, path) // 1024
    assert size_kb > 4_000  # large enough that a private copy would show
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(ROOT), str(path)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True) for _ in range(3)]
    try:
        assert all(w.stdout.readline().startswith("ready") for w in workers)
        for w in workers:
            mapping, rollup = _mapping_of(w.pid, path), _rollup(w.pid)
            # Every page of the file is in this worker's memory, and each is shared with the other workers.
            assert mapping["Rss"] >= 0.9 * size_kb
            # (Shared_Dirty: pages of the page cache not yet written back since the file was written.)
            shared = mapping["Shared_Clean"] + mapping["Shared_Dirty"]
            assert shared >= 0.9 * mapping["Rss"], mapping
            assert mapping["Private_Dirty"] == 0 and mapping["Anonymous"] == 0, mapping
            # Its proportional share: a third of the pages, as three processes hold them.
            assert mapping["Pss"] <= mapping["Rss"] / 3 * 1.05 + 64
            # The whole process (smaps_rollup) holds the index's pages as shared ones.
            assert rollup["Shared_Clean"] + rollup["Shared_Dirty"] >= shared
    finally:
        for w in workers:
            w.stdin.close()
            w.wait(timeout=30)


@pytest.mark.parametrize("repeat", [3, 300, 70_000])  # tf stored as uint8, uint16, int32
def test_term_counts_of_any_size_score_as_in_the_built_index(tmp_path, repeat):
    docs = [(1, ["a"] * repeat + ["b"]), (2, ["a", "b", "c"]), (3, ["b"] * 2), (4, ["d"])]
    built = BM25Index.build(docs)
    write_index_file(built, tmp_path / "i.bm25")
    mapped = map_index_file(tmp_path / "i.bm25")
    for q in (["a"], ["a", "b", "a"], ["c", "d"]):
        assert np.array_equal(mapped.scores_for(q), built.scores_for(q)) and mapped.search(q, 3) == built.search(q, 3)
    assert mapped.with_changes(remove_ids=[2]).search(["a"], 3) == built.with_changes(remove_ids=[2]).search(["a"], 3)

"""advise pauses the cyclic collector over its own work (the explains' summaries, the sampled
reads, the candidates built and measured: acyclic records), but not while sqlglot's trees (parent
links: cyclic) are made by ``scans``, and turns it back on however it ends."""

import gc

import pyarrow as pa
import pytest

from indexcore.analysis import advise as advise_module
from indexcore.analysis import workload as workload_module
from indexcore.errors import PredicateError
from indexcore.warehouse import Warehouse
from indexcore.write import TableWriter, make_schema


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    root = tmp_path_factory.mktemp("collector")
    schema = make_schema([("id", "STRING"), ("country", "STRING"), ("amount", "INT")],
                         options={"bucket": "-1", "file.format": "parquet", "file-index.bloom-filter.columns": "id"})
    writer = TableWriter.create(str(root), "db.t", schema, seed=1)
    for c in range(3):
        writer.write(pa.table({"id": [f"id-{c}-{i}" for i in range(40)], "country": [f"C{i % 4}" for i in range(40)],
                               "amount": pa.array([c * 100 + i for i in range(40)], pa.int32())}))
    return Warehouse(str(root)).table("db.t")


def _spy(monkeypatch, module, name, seen):
    real = getattr(module, name)

    def spied(*args, **kwargs):
        seen.setdefault(name, []).append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spied)


def test_paused_over_its_own_work_not_over_the_parsed_trees(table, monkeypatch):
    seen: dict[str, list[bool]] = {}
    for name in ("scans", "explain", "measure_existing", "measure_candidates", "statements_for"):
        _spy(monkeypatch, advise_module, name, seen)
    _spy(monkeypatch, workload_module, "_segments", seen)
    assert gc.isenabled()
    advice = advise_module.advise(table, "SELECT * FROM db.t WHERE country = 'C1';\n"
                                         "SELECT * FROM db.t WHERE amount BETWEEN 5 AND 9;\n")
    assert advice.candidates
    assert seen["scans"] == [True]
    assert seen["_segments"] and not any(seen["_segments"])
    for name in ("explain", "measure_existing", "measure_candidates", "statements_for"):
        assert seen[name] and not any(seen[name]), name
    assert gc.isenabled()


def test_the_collector_is_back_when_advise_fails(table):
    with pytest.raises(PredicateError):
        advise_module.advise(table, "SELECT * FROM db.t WHERE nope = 1")
    assert gc.isenabled()
    gc.disable()  # a caller that paused it keeps it paused
    try:
        advise_module.advise(table, "country = 'C2'")
        assert not gc.isenabled()
    finally:
        gc.enable()

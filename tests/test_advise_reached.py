"""advise summarises a query's explanation on explain's columns (no decision object per file
unless an existing index is measured): the files reached, their figures and raw index answers
equal those read from the decision objects, on tables with bloom, bitmap, DVs and several
partitions, for predicates pruned by partition, stats, the index and none."""

import numpy as np
import pyarrow as pa
import pytest

from indexcore.analysis.advise import _reached_columns, _reached_objects
from indexcore.analysis.advise_model import QueryRun
from indexcore.scan import explain
from indexcore.scan.decision_columns import DecisionColumns
from indexcore.warehouse import Warehouse
from indexcore.write import TableWriter, make_schema

# partition p, a bloom filter on id (one id per row), a bitmap on device, amount rising per commit
CASES = ["id = 'id-00000042'", "p = 'p001' AND device = 'web'", "amount BETWEEN 1005 AND 1020",
         "device = 'tv'", "country = 'C01'", "id = 'none' OR amount > 100000", "amount IS NOT NULL"]


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    root = tmp_path_factory.mktemp("reached")
    schema = make_schema([("id", "STRING"), ("device", "STRING"), ("country", "STRING"), ("amount", "INT"),
                          ("p", "STRING")], partition_keys=["p"],
                         options={"bucket": "-1", "file.format": "parquet", "file-index.bloom-filter.columns": "id",
                                  "file-index.bitmap.columns": "device"})
    writer = TableWriter.create(str(root), "db.t", schema, seed=1)
    n = 0
    for c in range(4):
        rows = [(f"id-{(n := n + 1):08d}", ("ios", "web")[i % 2], f"C{(p + c) % 5:02d}", c * 1000 + i, f"p{p:03d}")
                for p in range(3) for i in range(30)]
        writer.write(pa.table({k: pa.array(v, pa.int32() if k == "amount" else pa.string())
                               for k, v in zip(("id", "device", "country", "amount", "p"), zip(*rows, strict=True), strict=True)}))
    return Warehouse(str(root)).table("db.t")


@pytest.mark.parametrize("where", CASES)
def test_columns_and_objects_summarise_alike(table, where):
    ex = explain(table, where)
    assert isinstance(ex.files, DecisionColumns)
    by_columns, by_objects = QueryRun(scan=None), QueryRun(scan=None)
    reached_c, paths_c, raw_c = _reached_columns(by_columns, ex.files)
    reached_o, paths_o, raw_o = _reached_objects(by_objects, list(ex.files))
    assert paths_c == paths_o and list(raw_c) == raw_o  # raw answers taken lazily on columns
    assert list(reached_c) == reached_o and len(reached_c) == len(reached_o)
    for field in ("index_skipped", "rows_read", "base_rows", "sizes"):
        assert np.array_equal(getattr(by_columns, field), getattr(by_objects, field)), field
    assert by_columns.stats_pruned == by_objects.stats_pruned
    # truth by construction: the reached files are those the funnel counts at the index stage
    stages = [fd.skipped_by for fd in ex.files]
    assert len(paths_c) == sum(s is None or s.value == "index" for s in stages)


def test_the_cases_cover_every_stage(table):
    """The cases above reach the files through partition, stats and index pruning (else the test
    above could pass on files no stage touched)."""
    seen = {str(fd.skipped_by) for where in CASES for fd in explain(table, where).files}
    assert {"partition", "stats", "index", "None"} <= seen, seen

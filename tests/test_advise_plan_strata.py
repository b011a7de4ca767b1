"""advise's per-file figures from the plan, not from an object per file: the table's data rows
and each file's sampling stratum (its partition's text) come with :class:`PlannedFiles`, in this
process (:func:`planned_here`) and from a columnar plan (``planned_of_columns``, Spark's). Truth
by construction: the rows and partitions written; and advise's whole JSON is the same either way."""

import json

import pyarrow as pa
import pytest

from indexcore.analysis.advise import PlannedFiles, advise, planned_here
from indexcore.spark.jobs.planned import planned_of_columns
from indexcore.warehouse import Warehouse
from indexcore.write import TableWriter, make_schema

PARTS, COMMITS, ROWS = 4, 6, 25


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("strata"))
    schema = make_schema([("id", "STRING"), ("country", "STRING"), ("amount", "INT"), ("p", "STRING"), ("q", "INT")],
                         partition_keys=["p", "q"], options={"bucket": "-1", "file.format": "parquet"})
    writer = TableWriter.create(root, "db.t", schema, seed=1)
    for c in range(COMMITS):
        n = PARTS * ROWS
        writer.write(pa.table({"id": [f"id-{c}-{i}" for i in range(n)], "country": [f"C{i % 3}" for i in range(n)],
                               "amount": pa.array([c * 100 + i % ROWS for i in range(n)], pa.int32()),
                               "p": [f"p{i // ROWS}" for i in range(n)],
                               "q": pa.array([(i // ROWS) % 2 for i in range(n)], pa.int32())}))
    return root


def _planned(root: str, columnar: bool) -> PlannedFiles:
    table = Warehouse(root).table("db.t")
    return planned_of_columns(table, table.plan_columns()) if columnar else planned_here(table, None)


@pytest.mark.parametrize("columnar", [False, True])
def test_rows_and_strata_come_with_the_plan(root, columnar):
    plan = _planned(root, columnar)
    assert plan.table_rows == PARTS * ROWS * COMMITS
    files = list(plan.files)
    assert len(files) == PARTS * COMMITS
    at = list(range(len(files)))[::-1]
    expected = [str(files[i].partition) for i in at]
    assert len(set(expected)) == PARTS  # every partition: four texts over 24 files
    # read off the plan's numbers only: the files are not asked for
    no_objects = PlannedFiles(plan.snapshot, _Refuse(), plan.by_path, plan.index_of, plan.problems, plan.inventory,
                              plan.table_bytes, plan.table_rows, plan.partition_ids, plan.partition_texts)
    assert no_objects.strata(at) == expected


def test_without_plan_numbers_the_strata_are_read_off_the_files(root):
    plan = _planned(root, False)
    bare = PlannedFiles(plan.snapshot, plan.files, plan.by_path, plan.index_of, plan.problems, plan.inventory,
                        plan.table_bytes)
    assert bare.strata([3, 0]) == [str(plan.files[3].partition), str(plan.files[0].partition)]


class _Refuse(list):
    def __getitem__(self, i):
        raise AssertionError("a file object was asked for")


def test_advice_is_the_same_from_either_plan(root):
    """A sample smaller than the files a query reaches (strata matter), the exact measure, and
    equality, range and OR conditions."""
    text = ("SELECT * FROM db.t WHERE country = 'C1';\nSELECT * FROM db.t WHERE amount BETWEEN 105 AND 110;\n"
            "SELECT * FROM db.t WHERE (country = 'C2' OR amount < 3);\n")

    def plain(o):
        if isinstance(o, dict):
            return {k: plain(v) for k, v in o.items() if "seconds" not in k}
        return [plain(v) for v in o] if isinstance(o, list) else o

    for sample in (5, 0):
        got = []
        for columnar in (False, True):
            table = Warehouse(root).table("db.t")
            a = advise(table, text, sample=sample, details=True,
                       planned=lambda sid, t=table, c=columnar: _planned_of(t, sid, c))
            got.append(json.dumps(plain(a.to_json(details=True)), sort_keys=True, default=str))
        assert got[0] == got[1]
        assert '"files_measured": 5' in got[0] or sample == 0


def _planned_of(table, sid, columnar: bool) -> PlannedFiles:
    return planned_of_columns(table, table.plan_columns(sid)) if columnar else planned_here(table, sid)

"""``LIKE 'a%b'`` as Spark hands it to a data source, checked against Spark itself (local[2]):
its optimizer (``LikeSimplification``) rewrites it as ``length >= 2 AND startsWith('a') AND
endsWith('b')`` and pushes the two string tests as filters of the scan (Paimon's
``SparkFilterConverter`` turns ``StringStartsWith`` / ``StringEndsWith`` into ``startsWith`` /
``endsWith``); inside an OR nothing of it is pushed. Our parser must split and refuse alike."""

from __future__ import annotations

import os
import re
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from indexcore.errors import PredicateError
from indexcore.expr import ENDS_WITH, STARTS_WITH, leaves, parse_where
from indexcore.expr.rows import mask
from indexcore.types import parse_type

pytest.importorskip("pyspark")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)

ROWS = ["ab", "axb", "a", "aab", "ba", "abab", None, "a%b", "b", "AxB", "xaxb", "abyz", "abxyz", "aba"]
SCHEMA = {"s": parse_type("STRING"), "i": parse_type("INT")}


@pytest.fixture(scope="module")
def frame(tmp_path_factory):
    from indexcore.spark.session import get_session

    path = str(tmp_path_factory.mktemp("like") / "rows.parquet")
    pq.write_table(pa.table({"s": pa.array(ROWS, pa.string()), "i": pa.array(range(len(ROWS)), pa.int32())}), path)
    return get_session("local[2]").read.parquet(path)


def _pushed(df) -> str:
    plan = df._jdf.queryExecution().executedPlan().toString()
    found = re.search(r"PushedFilters: \[([^\]]*)\]", plan)
    assert found, plan
    return found.group(1)


@pytest.mark.parametrize("pattern, prefix, suffix", [("a%b", "a", "b"), ("ab%yz", "ab", "yz"), ("a%a", "a", "a")])
def test_spark_pushes_starts_and_ends_with_and_so_do_we(frame, pattern, prefix, suffix):
    df = frame.where(f"s LIKE '{pattern}' AND i >= 0")
    pushed = _pushed(df)
    assert f"StringStartsWith(s,{prefix})" in pushed and f"StringEndsWith(s,{suffix})" in pushed, pushed
    pred = parse_where(f"s LIKE '{pattern}' AND i >= 0", SCHEMA)
    ours = {(leaf.function, leaf.literals) for leaf in leaves(pred) if leaf.field == "s"}
    assert ours == {(STARTS_WITH, (prefix,)), (ENDS_WITH, (suffix,))}
    # what the pushed test keeps holds every row Spark's LIKE returns (Spark re-applies the length test)
    kept = {ROWS[k] for k, m in enumerate(mask(pa.table({"s": pa.array(ROWS, pa.string()),
                                                        "i": pa.array(range(len(ROWS)), pa.int32())}),
                                              pred, SCHEMA).tolist()) if m}
    spark_rows = {r["s"] for r in df.collect()}
    assert spark_rows <= kept and spark_rows
    if pattern == "a%a":
        assert "a" in kept and "a" not in spark_rows  # the length test stays with Spark


def test_inside_or_spark_pushes_nothing_of_it_and_we_refuse(frame):
    pushed = _pushed(frame.where("s LIKE 'a%b' OR i = 1"))
    assert "StringStartsWith" not in pushed and "StringEndsWith" not in pushed and "Or" not in pushed, pushed
    with pytest.raises(PredicateError, match="inside OR is not pushed down"):
        parse_where("s LIKE 'a%b' OR i = 1", SCHEMA)
    pushed = _pushed(frame.where("NOT s LIKE 'a%b'"))
    assert "StringStartsWith" not in pushed and "StringEndsWith" not in pushed, pushed
    with pytest.raises(PredicateError, match="has no negation"):
        parse_where("s NOT LIKE 'a%b'", SCHEMA)

"""advise's facts of a snapshot from Spark: its plan's columns planned in Spark tasks, no plan here.

:func:`advise_on_spark` gives advise's ``planned`` (:class:`~indexcore.analysis.advise.PlannedFiles`)
with a master: the snapshot's :class:`~indexcore.warehouse.plan_columns.PlanColumns` come back from
Spark tasks as Arrow with the census of index heads, in one job
(:func:`~indexcore.spark.jobs.metadata.spark_plan_and_census`: manifests read and merged by the
tasks, the driver reads only the plan head). The inventory of existing indexes reads those columns
(paths, schema ids) and that census, the table's data bytes are their sum, and a file's :class:`~indexcore.warehouse.model.LiveFile`
is made from its row only when advise asks for it (the files a query reaches with an index on its
column, the files it samples).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial

import pyarrow.compute as pc

from indexcore.analysis.advise import PlannedFiles
from indexcore.cache import LRU
from indexcore.spark.jobs.metadata import spark_explain_workload, spark_plan_and_census
from indexcore.spark.jobs.what_if import what_if_measure
from indexcore.spark.progress import Progress
from indexcore.views.common import kept_view
from indexcore.warehouse.model import LiveFile
from indexcore.warehouse.plan_columns import PathRows, PlanColumns

_BLOCK = 4096  # rows made into objects together (in one pass over the columns: ~10 us a file, not ~100)
_KEEP_FILES = 1 << 16  # objects kept at most in blocks, and as many made alone
_DENSE = 8  # files of one block asked for (each made alone) before the block is made whole


class LiveFileRows(Sequence):
    """A columnar plan's live files as a sequence in plan order, each made when first asked for:
    alone while few of its block of :data:`_BLOCK` rows are asked for (advise's samples: a hundred
    files a query, scattered over the plan; blocks made for them made every file at 1,000,000), its
    block in one pass once :data:`_DENSE` are and the blocks kept hold fewer than
    :data:`_KEEP_FILES` files (kept blocks are not dropped for others: advise asks in explain's
    order, not the plan's, and would make the same blocks again and again); files made alone are
    kept too, the :data:`_KEEP_FILES` most recently used. Iterating makes every block without
    keeping it."""

    def __init__(self, plan: PlanColumns, table):
        self._plan, self._table = plan, table
        self._blocks: dict[int, list[LiveFile]] = {}
        self._kept = 0  # files in the kept blocks
        self._alone = LRU(_KEEP_FILES)  # row -> its file, made alone
        self._asked: dict[int, int] = {}  # block number -> its files made alone

    def __len__(self) -> int:
        return self._plan.num_files

    def _block(self, b: int) -> list[LiveFile]:
        return self._plan.live_files(self._table, range(b * _BLOCK, min(len(self), (b + 1) * _BLOCK)))

    def __getitem__(self, at):
        if isinstance(at, slice):
            return [self[i] for i in range(*at.indices(len(self)))]
        at = int(at)
        if at < 0:
            at += len(self)
        if not 0 <= at < len(self):
            raise IndexError(at)
        b = at // _BLOCK
        made = self._blocks.get(b)
        if made is not None:
            return made[at % _BLOCK]
        one = self._alone.get(at)
        if one is not None:
            return one
        asked = self._asked[b] = self._asked.get(b, 0) + 1
        if asked > _DENSE and self._kept + _BLOCK <= _KEEP_FILES:
            made = self._blocks[b] = self._block(b)
            self._kept += len(made)
            return made[at % _BLOCK]
        one = self._plan.live_file(self._table, at)
        self._alone.put(at, one)
        return one

    def __iter__(self) -> Iterator[LiveFile]:
        for b in range(-(-len(self) // _BLOCK)):
            yield from self._blocks.get(b) or self._block(b)


class _ByPath(Mapping):
    """The files of a :class:`LiveFileRows` by path (their places by path, one dict)."""

    def __init__(self, rows: LiveFileRows, index_of: Mapping[str, int]):
        self._rows, self._index_of = rows, index_of

    def __getitem__(self, path: str) -> LiveFile:
        return self._rows[self._index_of[path]]

    def __len__(self) -> int:
        return len(self._index_of)

    def __iter__(self) -> Iterator[str]:
        return iter(self._index_of)


def planned_of_columns(table, plan: PlanColumns) -> PlannedFiles:
    """advise's :class:`PlannedFiles` of a columnar plan (objects made as they are asked for)."""
    rows = LiveFileRows(plan, table)
    index_of = PathRows(plan.files.column("path"))  # not a dict of every path (0.24 GB at 1,000,000 files)
    return PlannedFiles(plan.snapshot, rows, _ByPath(rows, index_of), index_of, tuple(plan.problems), plan,
                        int(pc.sum(plan.files.column("_FILE_SIZE")).as_py() or 0),
                        int(pc.sum(plan.files.column("_ROW_COUNT")).as_py() or 0),  # no object per file
                        plan.files.column("partition_id").to_numpy(), [str(p[0]) for p in plan.partitions])


def advise_on_spark(table, warehouse_url: str, master: str, snapshot_id: int | None = None, measure: bool = False,
                    progress_of: Callable[[str], Progress] | None = None, spark=None) -> dict:
    """advise's inputs with a Spark master, for ``advise(table, ..., **advise_on_spark(...))``: the
    snapshot's plan columns and its census of index heads from one Spark job
    (:func:`.metadata.spark_plan_and_census`; the census kept on ``table`` as its ``$file_indexes``,
    as :func:`.metadata.seed_census` keeps it; the plan columns of ``snapshot_id`` are ``planned``:
    give advise the same snapshot), every query explained in one Spark job
    (``explain_all``) and, with ``measure``, each candidate built and measured on every file by a
    Spark what-if job on those planned files (``measure``). This process plans no data file.
    ``progress_of(what)``: a progress callback for each job."""
    storage_options = table.storage.storage_options

    def progress(what: str) -> Progress | None:
        return progress_of(what) if progress_of is not None else None

    columns, census = spark_plan_and_census(warehouse_url, table.name, master, snapshot_id,
                                            progress("planning and census on Spark"), None, spark, storage_options)
    if census is not None:  # kept as the table's $file_indexes: the inventory and bloom sizing read it
        kept_view(table, "file_indexes", columns.snapshot.id, lambda: census)
    facts = planned_of_columns(table, columns)

    def explain_all(conditions: list, sid: int | None, whole: bool = True):
        return spark_explain_workload(warehouse_url, table.name, conditions, master, sid,
                                      progress("explaining on Spark"), None, spark, storage_options, whole)

    out = {"planned": partial(_facts, facts), "explain_all": explain_all}
    if measure:
        out["measure"] = what_if_measure(warehouse_url, table.name, master, snapshot_id,
                                         storage_options=storage_options, plan=facts)
    return out


def _facts(facts: PlannedFiles, _snapshot_id: int | None) -> PlannedFiles:
    """advise's ``planned``: the facts planned on Spark for the asked snapshot."""
    return facts

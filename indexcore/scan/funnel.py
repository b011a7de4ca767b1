"""The pruning funnel: per stage, what Paimon's read path still keeps and what the stage took away."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import attrgetter

import numpy as np

from indexcore.scan.decision_columns import DecisionColumns
from indexcore.scan.records import STAGES, FileDecision, Stage

_ORDER = {s: i for i, s in enumerate(Stage)}  # Paimon's order of the stages

#: The counts each funnel stage carries: kept after the stage, skipped by it, index I/O spent in it.
FUNNEL_KEYS = ("files", "rows", "bytes", "files_skipped", "rows_skipped", "bytes_skipped",
               "index_bytes", "index_requests")


def funnel(files: Iterable[FileDecision], verified: bool,
           global_index_io: tuple[int, int] = (0, 0)) -> dict[str, dict[str, int]]:
    """The pruning funnel: per stage, the files, rows and data bytes still kept after it, those
    it skipped, and the index bytes (and requests) read to decide it (``matching`` when verified).

    ``files`` / ``rows`` / ``bytes`` are kept after the stage; ``*_skipped`` are what the stage
    took away from what entered it (the files it pruned with their rows and bytes, plus rows
    dropped inside kept files: global index, index bitmaps and deletion vectors at ``read``), so
    kept + skipped equals what the stage before kept. Data bytes count whole files (a file read
    is read whole at most). Index bytes: the file indexes at ``index``, the global indexes at
    ``global_index`` (``global_index_io``: bytes and requests), the deletion vectors of the files
    read at ``read``.

    The one aggregation of per-file decisions: explain applies it to its files, the Spark
    evaluate job to the decisions its tasks return. Summed column-wise: each field of the files
    taken once as an array, each stage's counts as masked sums over them.
    """
    if isinstance(files, DecisionColumns):  # explain's own columns: no object per file
        return funnel_of_columns(files.funnel_columns(), verified, global_index_io)
    files = list(files)
    count = len(files)
    columns = {name: _ints(files, name) for name in ("row_count", "file_size", "rows_after_dv", "dv_bytes",
                                                     "bytes_read", "requests")}
    columns["skipped_by"] = np.array([None if f.skipped_by is None else f.skipped_by.value for f in files], object)
    columns["matching_rows"] = np.fromiter((f.matching_rows or 0 for f in files), np.int64, count)
    columns["global_index_rows"] = np.fromiter((f.row_count if f.global_index_rows is None else f.global_index_rows
                                                for f in files), np.int64, count)
    columns["global_index"] = np.fromiter((f.global_index_decision is not None for f in files), bool, count)
    return funnel_of_columns(columns, verified, global_index_io)


#: The per-file columns :func:`funnel_of_columns` sums: ``skipped_by`` (the stage's text, None when
#: read), ``global_index`` (the global indexes decided the file); the rest integers, with
#: ``matching_rows`` 0 and ``global_index_rows`` the row count where unknown.
FUNNEL_COLUMNS = ("skipped_by", "row_count", "file_size", "rows_after_dv", "matching_rows", "global_index_rows",
                  "global_index", "dv_bytes", "bytes_read", "requests")


def funnel_of_columns(columns: Mapping[str, np.ndarray], verified: bool,
                      global_index_io: tuple[int, int] = (0, 0)) -> dict[str, dict[str, int]]:
    """:func:`funnel` over the decisions' fields as columns (:data:`FUNNEL_COLUMNS`): what the Spark
    explain job sums over the Arrow columns its tasks send, with no decision object."""
    stages = STAGES + ((Stage.MATCHING,) if verified else ())
    if columns["global_index"].any():  # a row-tracking table with global indexes
        stages = stages[:STAGES.index(Stage.INDEX)] + (Stage.GLOBAL_INDEX,) + stages[STAGES.index(Stage.INDEX):]
    out = {s.value: dict.fromkeys(FUNNEL_KEYS, 0) for s in stages}
    n = len(stages)
    skipped = columns["skipped_by"]
    cut = np.full(len(skipped), n, np.int64)
    for i, s in enumerate(stages):
        cut[skipped == s.value] = i
    row_count, size = columns["row_count"], columns["file_size"]
    read = cut == n  # Paimon's read path reads the file (before verification)
    matching = columns["matching_rows"]
    if verified:  # read, but no row matches: kept up to the stage before matching
        cut[read & (matching == 0)] -= 1
    global_rows = columns["global_index_rows"]
    # rows[i]: each file's rows at stage i (FileDecision.rows_at); before[i]: at the stage before
    rows = []
    for stage in stages:
        if stage is Stage.MATCHING:
            rows.append(matching)
        elif stage is Stage.READ:
            rows.append(columns["rows_after_dv"])
        elif _ORDER[stage] >= _ORDER[Stage.GLOBAL_INDEX]:  # the rows the global indexes dropped stay dropped
            rows.append(global_rows)
        else:
            rows.append(row_count)
    before = [row_count] + rows[:-1]  # rows_at(ALL) is the row count
    for i, s in enumerate(stages):
        kept, gone = cut > i, cut == i
        out[s.value].update(files=int(kept.sum()), rows=int(rows[i][kept].sum()), bytes=int(size[kept].sum()),
                            files_skipped=int(gone.sum()),
                            rows_skipped=int((before[i][kept] - rows[i][kept]).sum() + before[i][gone].sum()),
                            bytes_skipped=int(size[gone].sum()))
    dv = columns["dv_bytes"][read]
    out[Stage.INDEX.value].update(index_bytes=int(columns["bytes_read"].sum()),
                                  index_requests=int(columns["requests"].sum()))
    out[Stage.READ.value].update(index_bytes=int(dv.sum()), index_requests=int((dv > 0).sum()))
    if Stage.GLOBAL_INDEX.value in out:
        out[Stage.GLOBAL_INDEX.value]["index_bytes"], out[Stage.GLOBAL_INDEX.value]["index_requests"] = \
            global_index_io
    return out


def _ints(files: list[FileDecision], name: str) -> np.ndarray:
    """One integer field of every file, as a column."""
    return np.fromiter(map(attrgetter(name), files), np.int64, len(files))

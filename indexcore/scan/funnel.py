"""The pruning funnel: per stage, what Paimon's read path still keeps and what the stage took away."""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter

import numpy as np

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
    files = list(files)
    stages = STAGES + ((Stage.MATCHING,) if verified else ())
    if any(f.global_index_decision is not None for f in files):  # a row-tracking table with global indexes
        stages = stages[:STAGES.index(Stage.INDEX)] + (Stage.GLOBAL_INDEX,) + stages[STAGES.index(Stage.INDEX):]
    out = {s.value: dict.fromkeys(FUNNEL_KEYS, 0) for s in stages}
    n, count = len(stages), len(files)
    position = {s: i for i, s in enumerate(stages)}
    # the files' fields as columns, then each stage's sums over them
    skipped = list(map(attrgetter("skipped_by"), files))
    cut = np.fromiter((n if s is None else position[s] for s in skipped), np.int64, count)
    row_count = _ints(files, "row_count")
    size = _ints(files, "file_size")
    read = cut == n  # Paimon's read path reads the file (before verification)
    if verified:  # read, but no row matches: kept up to the stage before matching
        matching = np.fromiter((f.matching_rows or 0 for f in files), np.int64, count)
        cut[read & (matching == 0)] -= 1
    global_rows = np.fromiter((row_count[i] if f.global_index_rows is None else f.global_index_rows
                               for i, f in enumerate(files)), np.int64, count)
    # rows[i]: each file's rows at stage i (FileDecision.rows_at); before[i]: at the stage before
    rows = []
    for stage in stages:
        if stage is Stage.MATCHING:
            rows.append(matching)
        elif stage is Stage.READ:
            rows.append(_ints(files, "rows_after_dv"))
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
    dv = _ints(files, "dv_bytes")[read]
    out[Stage.INDEX.value].update(index_bytes=int(_ints(files, "bytes_read").sum()),
                                  index_requests=int(_ints(files, "requests").sum()))
    out[Stage.READ.value].update(index_bytes=int(dv.sum()), index_requests=int((dv > 0).sum()))
    if Stage.GLOBAL_INDEX.value in out:
        out[Stage.GLOBAL_INDEX.value]["index_bytes"], out[Stage.GLOBAL_INDEX.value]["index_requests"] = \
            global_index_io
    return out


def _ints(files: list[FileDecision], name: str) -> np.ndarray:
    """One integer field of every file, as a column."""
    return np.fromiter(map(attrgetter(name), files), np.int64, len(files))

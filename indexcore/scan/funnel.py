"""The pruning funnel: per stage, what Paimon's read path still keeps and what the stage took away."""

from __future__ import annotations

from collections.abc import Iterable

from indexcore.scan.records import STAGES, FileDecision, Stage

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
    evaluate job to the decisions its tasks return.
    """
    files = list(files)
    stages = STAGES + ((Stage.MATCHING,) if verified else ())
    if any(f.global_index_decision is not None for f in files):  # a row-tracking table with global indexes
        stages = stages[:STAGES.index(Stage.INDEX)] + (Stage.GLOBAL_INDEX,) + stages[STAGES.index(Stage.INDEX):]
    out = {s.value: dict.fromkeys(FUNNEL_KEYS, 0) for s in stages}
    n = len(stages)
    position = {s: i for i, s in enumerate(stages)}
    # per stage: files, rows, bytes kept; files, rows, bytes skipped (summed here, put in ``out`` below)
    kept_files, kept_rows, kept_bytes = [0] * n, [0] * n, [0] * n
    gone_files, gone_rows, gone_bytes = [0] * n, [0] * n, [0] * n
    # a file pruned up to the stats stage keeps its row count at each stage before (rows_at): those
    # files, most of a selective predicate's, are summed by the stage that cut them and spread below
    early = position[Stage.STATS] + 1
    cut_files, cut_rows, cut_bytes = [0] * early, [0] * early, [0] * early
    index_bytes = index_requests = dv_bytes = dv_requests = 0
    for f in files:
        # a file survives every stage before the one that prunes it (none prunes at Stage.ALL)
        cut = n if f.skipped_by is None else position[f.skipped_by]
        if verified and cut == n and not f.survives(Stage.MATCHING):
            cut -= 1  # read, but no row matches
        size = f.file_size
        index_bytes += f.bytes_read
        index_requests += f.requests
        if cut < early:
            cut_files[cut] += 1
            cut_rows[cut] += f.row_count
            cut_bytes[cut] += size
            continue
        before = f.rows_at(Stage.ALL)
        for i in range(cut):
            now = f.rows_at(stages[i])
            kept_files[i] += 1
            kept_rows[i] += now
            kept_bytes[i] += size
            gone_rows[i] += before - now
            before = now
        if cut < n:
            gone_files[cut] += 1
            gone_rows[cut] += before
            gone_bytes[cut] += size
        if f.read and f.dv_bytes:
            dv_bytes += f.dv_bytes
            dv_requests += 1
    for cut in range(early):
        gone_files[cut] += cut_files[cut]
        gone_rows[cut] += cut_rows[cut]
        gone_bytes[cut] += cut_bytes[cut]
        for i in range(cut):
            kept_files[i] += cut_files[cut]
            kept_rows[i] += cut_rows[cut]
            kept_bytes[i] += cut_bytes[cut]
    for i, s in enumerate(stages):
        out[s.value].update(files=kept_files[i], rows=kept_rows[i], bytes=kept_bytes[i], files_skipped=gone_files[i],
                            rows_skipped=gone_rows[i], bytes_skipped=gone_bytes[i])
    out[Stage.INDEX.value].update(index_bytes=index_bytes, index_requests=index_requests)
    out[Stage.READ.value].update(index_bytes=dv_bytes, index_requests=dv_requests)
    if Stage.GLOBAL_INDEX.value in out:
        out[Stage.GLOBAL_INDEX.value]["index_bytes"], out[Stage.GLOBAL_INDEX.value]["index_requests"] = \
            global_index_io
    return out

"""The level stage: primary-key tables that read without merging (deletion vectors, or the
``first-row`` merge engine) skip level-0 files (``batchScanSkipLevel0``).

The only rule Paimon applies per level; the primary-key value filter is a stats rule
(``filterWholeBucketByStats``) and lives with the stats stage."""

from __future__ import annotations

from indexcore.scan.records import Batch, Decision
from indexcore.warehouse.model import TableSchema


class LevelStage:
    """``level``: a level-0 file is skipped where the table's batch scan skips level 0."""

    def __init__(self, table_schema: TableSchema):
        self.skip_level0 = table_schema.skips_level0

    def decide(self, batch: Batch) -> None:
        for lf, record in zip(batch.files, batch.records, strict=True):
            ok = not (self.skip_level0 and lf.file.level == 0)
            record["level_decision"] = Decision.of(ok)
            if not ok:
                record["notes"].append("level-0 file: not read by a batch scan that skips level 0")

"""The health score's weights: what each issue kind may take off a table's 100, and the small-file
penalty, both following Apache Amoro's table health score.

Amoro (``CommonPartitionEvaluator.getHealthScore``, apache/amoro
``amoro-ams/src/main/java/org/apache/amoro/server/optimizing/plan/CommonPartitionEvaluator.java``) scores
``100 - table_factor * (40 * small_files + 40 * equality_deletes + 20 * position_deletes)``:
small files weigh as much as its worst kind of delete and twice its position deletes, where

- ``small_files = 1 - min(average data file size, min target size) / min target size``: a table of
  5 KB files against a 96 MB minimum is at 1.0, the whole 40 points;
- ``table_factor = min(files, 12) / 12 * min(data bytes, target size) / target size``: a table
  smaller than one target file costs little however fragmented (12 is Amoro's minor-optimizing
  trigger file count, ``self-optimizing.minor.trigger.file-count``).

So :data:`CAPS` gives small files 40 points (it was 15, so a 45,504-file table of 5 KB files
scored 84/100 where Amoro says 60), and :func:`small_file_points` is Amoro's formula with Paimon's
numbers: the small-file threshold (a quarter of ``target-file-size``,
:meth:`CoreOptions.small_file_threshold`, where Amoro's minimum is 75% of its target) for the minimum
and ``target-file-size`` for the target. Unlike Amoro the item is raised only when two small files
share a bucket (a Paimon compaction merges within a bucket; a lone small file has nothing to merge with). Our deletion-vector kind (Paimon's
position deletes) keeps 25 points against Amoro's 20: it is judged on the densest bucket, where a
compaction pays back soonest. The other kinds are ours (Amoro does not score indexes).
"""

from __future__ import annotations

# issue kind -> the most points it may take off a table's 100
CAPS = {"unreadable-metadata": 40, "unusable-files": 40, "small-files": 40, "dv-density": 25, "wrong-column": 20,
        "index-coverage": 20, "index-overhead": 15, "bloom-oversized": 10, "bloom-over-fpp": 10, "stale-index": 5}
# Amoro's self-optimizing.minor.trigger.file-count: below it a table's small files cost in proportion
MINOR_TRIGGER_FILES = 12


def deduction(kind: str, share: float) -> int:
    """Points off for an issue touching ``share`` of the table (at least 1, at most the kind's cap)."""
    return max(1, round(CAPS[kind] * min(1.0, max(0.0, share))))


def _ratio(part: float, whole: float) -> float:
    return min(part, whole) / whole if whole > 0 else 0.0


def small_file_points(files: int, data_bytes: int, threshold: int, target: int) -> int:
    """Amoro's small-file penalty in points: ``CAPS['small-files']`` times how far the average data
    file falls short of ``threshold``, scaled by the table factor (module docstring). A table of one
    file, or of no bytes, costs nothing."""
    if files <= 1 or data_bytes <= 0:
        return 0
    shortfall = 1.0 - _ratio(data_bytes / files, threshold)
    table_factor = _ratio(files, MINOR_TRIGGER_FILES) * _ratio(data_bytes, target)
    return round(CAPS["small-files"] * table_factor * shortfall)


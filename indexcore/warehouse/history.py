"""Consecutive snapshots walked incrementally, as Paimon's incremental scan reads them.

Snapshot ``N``'s delta manifest list holds exactly what commit ``N`` changed, so the live files
of ``N`` are those of ``N - 1`` with its ADD/DELETE entries applied; its index manifest is the
whole index set again (Paimon rewrites it per commit, replacing a bucket's DV file), so it is
read only when its name changes. Each manifest is therefore decoded once for the whole walk,
instead of once per snapshot re-planned from scratch. A gap (expired or unreadable snapshot)
or an unreadable delta falls back to merging that snapshot's base and delta lists.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from indexcore.paimon.index_types import DELETION_VECTORS
from indexcore.warehouse.model import IndexManifestEntry, Snapshot

# entries of Table.manifest_entries: (kind, merge key, partition bytes, bucket, total buckets, meta)
_PART, _BUCKET, _META = 2, 3, 5


@dataclass
class LiveState:
    """The live data files of one snapshot in the walk and its deletion-vector ranges.

    ``entries`` maps Paimon's merge key to the manifest entry; ``row_count`` is their rows;
    ``dv_ranges`` maps (partition values, bucket, data file) to (range, DV file path).
    ``from_scratch`` tells whether this snapshot was merged from its base list (first one,
    or after a gap) rather than from the previous state.
    """

    snapshot: Snapshot
    entries: dict[tuple, tuple]
    row_count: int
    index_entries: list[IndexManifestEntry]
    dv_ranges: dict[tuple, tuple]
    from_scratch: bool


def _rows(entries: dict[tuple, tuple]) -> int:
    return sum(e[_META].row_count for e in entries.values())


def _dv_ranges(table, index_entries: list[IndexManifestEntry], problems: list) -> dict[tuple, tuple]:
    out: dict[tuple, tuple] = {}
    for ie in index_entries:
        meta = ie.index_file
        if meta.index_type == DELETION_VECTORS and meta.dv_ranges:
            path = table.index_file_path(ie, table.partition_dir(ie.partition), problems)
            for r in meta.dv_ranges:
                out[(ie.partition, ie.bucket, r.data_file)] = (r, path)
    return out


def walk_snapshots(table, snapshot_ids: Sequence[int]) -> Iterator[LiveState]:
    """The live state of each readable snapshot in ``snapshot_ids`` (ascending), built from the
    previous one by its delta manifests. Unreadable parts become the table's problems."""
    state: LiveState | None = None
    problems: list = []
    for sid in sorted(snapshot_ids):
        snap = table.load_snapshot(sid)  # listed ids: no tag lookup; unreadable ones are problems
        if snap is None:
            state = None
            continue
        entries = None
        if state is not None and state.snapshot.id == sid - 1:
            deltas = table.delta_manifests(snap, problems)
            if deltas is not None:
                entries = dict(state.entries)
                if not table.merge_entries(entries, deltas, problems):
                    entries = None
        from_scratch = entries is None
        if from_scratch:
            entries = table.live_entries(snap, problems)
        if state is not None and state.snapshot.index_manifest == snap.index_manifest:
            index_entries, dv_ranges = state.index_entries, state.dv_ranges
        else:
            index_entries = table.index_entries(snap, problems)
            dv_ranges = _dv_ranges(table, index_entries, problems)
        state = LiveState(snap, entries, _rows(entries), index_entries, dv_ranges, from_scratch)
        yield state


def live_dv_ranges(table, state: LiveState) -> Iterator[tuple[tuple, tuple]]:
    """(entry, (range, DV file path)) for each live data file of ``state`` that has a deletion vector,
    matched as :meth:`Table.plan` attaches them (partition values, bucket, file name)."""
    if not state.dv_ranges:
        return
    values = {raw: table.partition(raw)[0] for raw in {e[_PART] for e in state.entries.values()}}
    ranges = state.dv_ranges
    for e in state.entries.values():
        hit = ranges.get((values[e[_PART]], e[_BUCKET], e[_META].file_name))
        if hit is not None:
            yield e, hit

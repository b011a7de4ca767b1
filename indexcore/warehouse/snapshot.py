"""``snapshot/snapshot-N`` and ``tag/tag-NAME`` JSON files (Paimon's Snapshot)."""

from __future__ import annotations

import json
from typing import Any

from ..errors import CorruptFileError
from .model import Snapshot

_FIELDS = {
    "id": "id", "schemaId": "schema_id", "baseManifestList": "base_manifest_list",
    "deltaManifestList": "delta_manifest_list", "changelogManifestList": "changelog_manifest_list",
    "indexManifest": "index_manifest", "commitUser": "commit_user",
    "commitIdentifier": "commit_identifier", "commitKind": "commit_kind", "timeMillis": "time_millis",
    "totalRecordCount": "total_record_count", "deltaRecordCount": "delta_record_count",
    "changelogRecordCount": "changelog_record_count", "watermark": "watermark",
    "nextRowId": "next_row_id", "version": "version",
    "baseManifestListSize": "base_manifest_list_size",
    "deltaManifestListSize": "delta_manifest_list_size",
    "changelogManifestListSize": "changelog_manifest_list_size", "logOffsets": "log_offsets",
    "statistics": "statistics", "properties": "properties",
}


def parse_snapshot(data: bytes | str, name: str = "<snapshot>") -> Snapshot:
    """Decode snapshot (or tag) JSON; unknown keys are ignored, as Paimon does."""
    try:
        obj: dict[str, Any] = json.loads(data)
        kw = {py: obj[js] for js, py in _FIELDS.items() if js in obj}
        kw["id"] = int(kw["id"])
        kw["schema_id"] = int(kw["schema_id"])
        kw.setdefault("base_manifest_list", None)
        kw.setdefault("delta_manifest_list", None)
        return Snapshot(path=name, **kw)
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptFileError(f"bad snapshot JSON: {exc}", file=name, structure="snapshot") from exc


def numbered(name: str, prefix: str) -> int | None:
    if not name.startswith(prefix):
        return None
    tail = name[len(prefix):]
    return int(tail) if tail.isdigit() else None

"""``snapshot/snapshot-N`` and ``tag/tag-NAME`` JSON files (Paimon's Snapshot)."""

from __future__ import annotations

import json
from typing import Any

from indexcore.errors import CorruptFileError
from indexcore.warehouse.model import Snapshot

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


# Paimon's CommitKind values
COMMIT_KINDS = ("APPEND", "COMPACT", "OVERWRITE", "ANALYZE")
_REQUIRED = ("id", "schemaId", "baseManifestList", "deltaManifestList", "commitKind")
_STRINGS = ("baseManifestList", "deltaManifestList", "changelogManifestList", "indexManifest", "commitUser",
            "commitKind", "statistics")
_LONGS = ("id", "schemaId", "commitIdentifier", "timeMillis", "totalRecordCount", "deltaRecordCount",
          "changelogRecordCount", "watermark", "nextRowId", "version", "baseManifestListSize",
          "deltaManifestListSize", "changelogManifestListSize")
_NON_NEGATIVE = ("id", "schemaId", "timeMillis", "baseManifestListSize", "deltaManifestListSize",
                 "changelogManifestListSize")
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
MAX_TIME_MILLIS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: later times are damage


def parse_snapshot(data: bytes | str, name: str = "<snapshot>") -> Snapshot:
    """Decode snapshot (or tag) JSON; unknown keys are ignored, as Paimon does.

    Every field Paimon requires must be there with the type Paimon writes (a manifest list is
    a file name, counts and times are longs in range, the commit kind is one Paimon knows);
    anything else is a CorruptFileError naming the field.
    """
    try:
        obj: dict[str, Any] = json.loads(data)
    except (ValueError, TypeError) as exc:
        raise CorruptFileError(f"bad snapshot JSON: {exc}", file=name, structure="snapshot") from exc
    if not isinstance(obj, dict):
        raise CorruptFileError("snapshot JSON is not an object", file=name, structure="snapshot")
    _check_fields(obj, name)
    kw = {py: obj[js] for js, py in _FIELDS.items() if js in obj}
    return Snapshot(path=name, **kw)


def _check_fields(obj: dict[str, Any], name: str) -> None:
    def bad(field: str, why: str) -> CorruptFileError:
        return CorruptFileError(f"snapshot field {field!r} {why}", file=name, structure=f"snapshot.{field}")

    for field in _REQUIRED:
        if obj.get(field) is None:
            raise bad(field, "is missing")
    for field in _STRINGS:
        value = obj.get(field)
        if value is not None and not isinstance(value, str):
            raise bad(field, f"must be a string, not {type(value).__name__} {value!r:.40}")
    for field in ("baseManifestList", "deltaManifestList", "changelogManifestList", "indexManifest"):
        value = obj.get(field)
        if value is not None and (not value or "/" in value or "\\" in value or value in (".", "..")):
            raise bad(field, f"is not a manifest file name: {value!r:.80}")
    for field in _LONGS:
        value = obj.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not _LONG_MIN <= value <= _LONG_MAX:
            raise bad(field, f"must be a long, not {value!r:.40}")
        if field in _NON_NEGATIVE and value < 0:
            raise bad(field, f"must not be negative: {value}")
    if (obj.get("timeMillis") or 0) > MAX_TIME_MILLIS:
        raise bad("timeMillis", f"is past the year 9999: {obj['timeMillis']}")
    if obj["commitKind"] not in COMMIT_KINDS:
        raise bad("commitKind", f"is not one of {', '.join(COMMIT_KINDS)}: {obj['commitKind']!r:.40}")
    for field in ("logOffsets", "properties"):
        value = obj.get(field)
        if value is not None and not isinstance(value, dict):
            raise bad(field, f"must be an object, not {type(value).__name__}")


def numbered(name: str, prefix: str) -> int | None:
    if not name.startswith(prefix):
        return None
    tail = name[len(prefix):]
    return int(tail) if tail.isdigit() else None

"""A table's schemas: every version, the one a file or snapshot was written under, the types
of its keys and values, and the options and folder layout of the latest."""

from __future__ import annotations

import posixpath

from indexcore.errors import IndexCoreError, StorageError
from indexcore.paimon.layout import (
    PathLayout,
    schema_path,
)
from indexcore.paimon.options import CoreOptions
from indexcore.types import DataType
from indexcore.warehouse.model import (
    LiveFile,
    Snapshot,
    TableSchema,
)
from indexcore.warehouse.schema import parse_schema, schema_id_from_name

SYSTEM_BIGINT_FIELDS = ("_ROW_ID", "_SEQUENCE_NUMBER", "_KEY__SEQUENCE_NUMBER")


class TableSchemas:
    """Schema reads of :class:`~indexcore.warehouse.table.Table` (``schema/schema-N`` files)."""

    def schemas(self) -> list[TableSchema]:
        """Every readable schema version, by id."""
        if self.caches.schemas is None:
            schemas = {}
            for name in self._list("schema"):
                sid = schema_id_from_name(name)
                if sid is None:
                    continue
                path = posixpath.join(self.path, "schema", name)
                try:
                    schemas[sid] = parse_schema(self.storage.read_bytes(path), path)
                except IndexCoreError as exc:
                    self._problem(path, "schema", exc.message)
            self.caches.schemas = dict(sorted(schemas.items()))
        return list(self.caches.schemas.values())

    def schema(self, schema_id: int | None = None) -> TableSchema:
        """The latest schema, or the one with ``schema_id``."""
        if self.caches.schemas is None:
            self.schemas()
        schemas = self.caches.schemas
        if not schemas:
            why = next((p for p in self.problems if p.structure == "schema"), None)
            raise StorageError(f"table {self.name} has no readable schema" + (f": {why.reason}" if why else ""),
                               file=why.path if why else self.path)
        if schema_id is None:
            return schemas[max(schemas)]
        if schema_id not in schemas:
            raise StorageError(f"no schema {schema_id}", file=schema_path(self.path, schema_id))
        return schemas[schema_id]

    def schema_or_latest(self, schema_id: int | None, path: str | None = None,
                         problems: list | None = None) -> TableSchema:
        """Schema ``schema_id``, or the latest one when it is missing or unreadable.

        The one fallback policy for "the schema this was written under": the fallback is
        reported as a :class:`Problem` naming ``path`` (also appended to ``problems``).
        """
        if schema_id is None:
            return self.schema()
        try:
            return self.schema(schema_id)
        except IndexCoreError as exc:
            latest = self.schema()
            self._problem(path or self.path, "schema", f"{exc.message}; using the latest schema {latest.id}",
                          problems)
            return latest

    def file_schema(self, live_file: LiveFile, problems: list | None = None) -> TableSchema:
        """The schema a data file was written under (see :meth:`schema_or_latest`)."""
        return self.schema_or_latest(live_file.file.schema_id, live_file.path, problems)

    def snapshot_schema(self, snapshot: Snapshot | None, problems: list | None = None) -> TableSchema:
        """The schema a snapshot was committed under (the latest for no snapshot)."""
        if snapshot is None:
            return self.schema()
        return self.schema_or_latest(snapshot.schema_id, snapshot.path, problems)

    def read_schema(self, snapshot_id: int | None, snapshot: Snapshot | None) -> TableSchema:
        """The schema a read uses: a time-travelled snapshot's own, else the latest."""
        return self.snapshot_schema(snapshot if snapshot_id is not None else None)

    @property
    def options(self) -> dict[str, str]:
        return self.schema().options

    @property
    def core_options(self) -> CoreOptions:
        """The latest schema's options as a typed record."""
        return self.schema().core_options

    @property
    def layout(self) -> PathLayout:
        """Folders of this table under the latest schema (partition, bucket, index paths)."""
        schema = self.schema()
        if self.caches.layout is None or self.caches.layout[0] is not schema:
            self.caches.layout = (schema, schema.path_layout(self.data_root))
        return self.caches.layout[1]

    def partition_types(self) -> list:
        schema = self.schema()
        return [f.type for f in schema.partition_fields]

    def key_types(self, schema_id: int) -> list:
        schema = self.schema_or_latest(schema_id)
        return [schema.field(k).type for k in schema.trimmed_primary_keys]

    def value_types(self, schema_id: int, cols: tuple | None, write_cols: tuple | None) -> list:
        schema = self.schema_or_latest(schema_id)
        names = cols if cols is not None else write_cols
        if names is None:
            return [f.type for f in schema.fields]
        latest = self.schema()
        out = []
        for n in names:
            for candidate in (schema, latest):
                try:
                    out.append(candidate.field(n).type)
                    break
                except KeyError:
                    continue
            else:  # system fields (_ROW_ID, _SEQUENCE_NUMBER) are BIGINT; others undecoded
                out.append(DataType("BIGINT") if n in SYSTEM_BIGINT_FIELDS else DataType("UNKNOWN"))
        return out


"""The advisor on the indexes a table has: inventory, what each skips alone, and its verdict.

One entry per table column x index type found in live files or configured by
``file-index.<type>.columns`` (:func:`existing_indexes`, from the ``$file_indexes`` census).
Per query, :func:`measure_existing` counts the files, rows and data bytes each index skips on
its own among the files that partition, bucket, level and statistics pruning keep (its answer
alone, through :class:`~indexcore.scan.file_index.FileIndexPredicate` and the read path's
:func:`~indexcore.scan.explain.read_path_result`). :func:`verdicts` then judges each one:
``wrong column``, ``never prunes``, ``stale``, ``missing``, ``oversized`` / ``over fpp``
(:func:`~indexcore.analysis.bloom_sizing.column_sizing`), else ``earns its keep``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.analysis.advise_model import (
    NEVER_PRUNES,
    NOT_IN_WORKLOAD,
    REACHED_INDEX,
    STATS_PRUNE,
    ExistingIndex,
    QueryRun,
)
from indexcore.analysis.bloom_sizing import OK, OVERSIZED, SKEW, column_sizing, rows_tally, sizing_of
from indexcore.config import settings
from indexcore.errors import IndexCoreError
from indexcore.expr import and_all, conjuncts
from indexcore.formats.base import BitmapResult, FileIndexResult
from indexcore.formats.registry import BLOOM_FILTER, FILE_INDEX_TYPES
from indexcore.scan.decision_columns import DecisionColumns
from indexcore.scan.file_index import FileIndexPredicate, read_path_result
from indexcore.scan.stats import devolved, field_map
from indexcore.views import view
from indexcore.views.census import file_indexes
from indexcore.views.census_blobs import Blobs, CensusBlobs
from indexcore.views.census_rows import codes_of
from indexcore.views.common import kept_view_if_built
from indexcore.warehouse.model import LiveFile, Problem
from indexcore.warehouse.plan_columns import PlanColumns


def _table_column(schema, file_schema, column: str, schema_id: int) -> tuple[str, str | None]:
    """The table's current name for a file's indexed ``column`` (matched by field id), and why the
    index is on the wrong column (None when it is not)."""
    ff = file_schema.field(column) if column in file_schema.field_names else None
    tf = schema.field_by_id(ff.id) if ff is not None else None
    name = tf.name if tf is not None else column
    if ff is None:
        return name, f"column {column!r} is not in the file's schema (schema {schema_id})"
    if tf is None:
        return name, f"field {ff.id} ({column!r}) of the file is no longer a table column"
    if tf.name != column and column in schema.field_names:
        return name, f"built on field {ff.id}, which the table now calls {tf.name!r}; {column!r} is another field"
    return name, None


def _census(table, snapshot_id: int | None, files: Sequence[LiveFile] | PlanColumns) -> pa.Table:
    """The ``$file_indexes`` census of the snapshot whose planned live files are ``files``: the
    table's kept one when a page built it; the columnar walk when ``files`` is the columnar plan
    (built already); else walked over the live file objects (the same rows,
    tests/test_spark_metadata.py; the columnar walk would read every manifest again for its plan:
    27 ms against 8 ms on 1,000 files, a tenth of what advise adds to its explains at 12 queries)."""
    kept = None if snapshot_id is None else kept_view_if_built(table, "file_indexes", snapshot_id)
    if kept is not None:
        return kept
    if isinstance(files, PlanColumns):
        return view(table, "file_indexes", snapshot_id)
    return file_indexes(table, snapshot_id, files=files)


def existing_indexes(table, snapshot_id: int | None, schema, files: Sequence[LiveFile] | PlanColumns,
                     problems: list[Problem], census: pa.Table | None = None) -> list[ExistingIndex]:
    """One entry per table column x index type over ``files`` (see :func:`.advise.index_inventory`;
    a :class:`PlanColumns`: the snapshot's, objects made only for the files whose blobs are read;
    ``census``: the ``$file_indexes`` rows of exactly ``files``, as a Spark task has them);
    unreadable containers and entries go to ``problems``."""
    configured = schema.core_options.configured_indexes()
    census = _census(table, snapshot_id, files) if census is None else census
    if isinstance(files, PlanColumns):  # a file looked up by its row: no map of every path
        count, by_path = files.num_files, None
        file_paths, file_schemas = files.files["path"], files.files["_SCHEMA_ID"].to_numpy()
    else:
        files = list(files)
        count, by_path = len(files), {lf.path: lf for lf in files}
        file_paths = pa.array([lf.path for lf in files], pa.string())
        file_schemas = np.array([lf.file.schema_id for lf in files], np.int64)
    rows = CensusBlobs(table, census, files, file_paths)
    groups: dict[tuple[str, str], ExistingIndex] = {}

    def group(column: str, index_type: str) -> ExistingIndex:
        key = (column, index_type)
        if key not in groups:
            groups[key] = ExistingIndex(column, index_type, key in configured,
                                        schema.file_index_options(column, index_type), count, Blobs(rows))
        return groups[key]

    for column, index_type in configured:
        group(column, index_type)
    # unreadable containers and unusable entries, in census (file) order
    bad = census.select(["file_path", "index_file_path", "column_name", "error"])
    bad = bad.filter(pc.or_(pc.is_valid(bad["error"]), pc.is_null(bad["column_name"]))).to_pylist()
    for r in bad:
        problems.append(Problem(r["index_file_path"] or r["file_path"], "file index",
                                r["error"] or ("unreadable" if r["column_name"] is None else "")))
    # the census grouped by (file schema, column, kind): a few keys over 180,000 rows, each placed
    # on its table column once (the name a later schema gives the field, or why it is the wrong column)
    placed: dict[tuple[str, str], list] = {}  # group -> [row arrays, wrong reasons] of its keys
    paths = census["file_path"]  # kept a dictionary: plain, a 1M-file census's paths took 1.1 GB more in health
    for schema_id, column, index_type, mine, size in _keyed_rows(census):
        first_path = paths[int(mine[0])].as_py()  # its files' schema, as the census read it
        first = (files.live_file(table, pc.index(file_paths, first_path).as_py()) if by_path is None
                 else by_path[first_path])
        name, wrong = _table_column(schema, table.file_schema(first), column, schema_id)
        g = group(name, index_type)
        g.bytes += size
        at = placed.setdefault((g.column, g.index_type), [[], []])
        at[0].append(mine.astype(np.int64))
        at[1].append(wrong)
    rows_of: dict[tuple[str, str], np.ndarray] = {}  # each group's census rows, in census order
    for key, (arrays, reasons) in placed.items():
        g = groups[key]
        order = rows_of[key] = np.concatenate(arrays)
        why = np.repeat(np.arange(len(reasons)), [len(a) for a in arrays])
        sort = np.argsort(order, kind="stable")
        order, why = order[sort], why[sort]
        in_order = paths.take(pa.array(order))
        g.blobs.add(in_order, order)
        if any(reasons):
            g.wrong_column.extend({"path": p, "reason": reasons[w]}
                                  for p, w in zip(in_order.to_pylist(), why.tolist(), strict=True) if reasons[w])
    # a configured index is missing from the files without it whose schema has its field: on the
    # file columns (a mask per schema id, not a test per file of a 50,000-file plan)
    ids = {f.name: f.id for f in schema.fields}
    for (column, kind), g in groups.items():
        if not g.configured or column not in ids or not count:
            continue
        file_of_row = rows.file_rows()  # each census row's file (its row in file_paths), worked out once
        lacking = np.ones(count, bool)
        carried = file_of_row[rows_of.get((column, kind), np.zeros(0, np.int64))]
        lacking[carried[carried >= 0]] = False
        if not lacking.any():
            continue
        with_field = [sid for sid in np.unique(file_schemas[lacking]).tolist()  # the files' schemas
                      if table.schema_or_latest(sid, _first(file_paths, file_schemas, sid, lacking)).field_by_id(
                          ids[column]) is not None]
        g.missing.extend(pc.filter(file_paths, pa.array(lacking & np.isin(file_schemas, with_field))).to_pylist())
    order = inventory_order(schema)
    return sorted(groups.values(), key=lambda g: order(g.column, g.index_type))


def _keyed_rows(census: pa.Table) -> Iterator[tuple[int, str, str, np.ndarray, int]]:
    """The census rows naming a column grouped by (file schema id, column, index kind): each key's
    rows (ascending) and blob bytes. On a number per key and a mask per key (a few keys over
    3.9M rows at 1M files; Arrow's group-by with row lists took 1.1 s there)."""
    named = census.filter(pc.is_valid(census["column_name"])) if census["column_name"].null_count else census
    at = (np.flatnonzero(pc.is_valid(census["column_name"]).to_numpy(zero_copy_only=False))
          if census["column_name"].null_count else None)
    if not named.num_rows:
        return
    codes = [codes_of(named[c]) for c in ("schema_id", "column_name", "index_type")]
    key = np.zeros(named.num_rows, np.int64)
    for values, where in codes:
        key = key * len(values) + where
    sizes = named["index_size_in_bytes"]
    given = sizes.is_valid().to_numpy(zero_copy_only=False)
    sizes = pc.fill_null(sizes, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    for k in np.flatnonzero(np.bincount(key)).tolist():
        mine = key == k
        parts, rest = [], k
        for values, _where in reversed(codes):
            parts.append(values[rest % len(values)])
            rest //= len(values)
        schema_id, column, index_type = reversed(parts)
        rows = np.flatnonzero(mine)
        yield (schema_id, column, index_type, rows if at is None else at[rows],
               int(sizes[mine & given].sum()))


def _first(paths, schema_ids: np.ndarray, schema_id: int, among: np.ndarray) -> str:
    """The path of the first of the files ``among`` (a mask) written under ``schema_id`` (what a
    missing schema is reported on)."""
    return paths[int(np.flatnonzero(among & (schema_ids == schema_id))[0])].as_py()


def inventory_order(schema):
    """The sort key of an inventory entry by (column, index type): table field order, then kind."""
    order = {n: i for i, n in enumerate(schema.field_names)}
    return lambda column, index_type: (order.get(column, len(order)), column, FILE_INDEX_TYPES.index(index_type)
                                       if index_type in FILE_INDEX_TYPES else 99)


def _index_alone(table, schema, lf: LiveFile, blob, predicate, deleted) -> FileIndexResult | None:
    """What the read path decides for one file with only this index (None: it cannot answer)."""
    if blob.reader is None:
        return None
    fs = table.file_schema(lf)
    pred = and_all(devolved(conjuncts(predicate), field_map(schema, fs)))
    if pred is None:
        return None
    raw = FileIndexPredicate.for_readers({blob.column: [blob.reader]}, fs.row_type()).evaluate(pred)
    return read_path_result(raw, lf.file.row_count, deleted, lf.bitmap64)


class DeletedPositions:
    """Deletion-vector positions per data file, read once."""

    def __init__(self, table, problems: list[Problem]):
        self.table, self.problems, self.cache = table, problems, {}

    def __call__(self, lf: LiveFile) -> Any:
        if lf.deletion_vector is None:
            return None
        if lf.path not in self.cache:
            try:
                dv = self.table.deletion_vector(lf)
                self.cache[lf.path] = None if dv is None else dv.positions
            except IndexCoreError as exc:
                self.problems.append(Problem(lf.dv_file_path or lf.path, "deletion vector", exc.message))
                self.cache[lf.path] = None
        return self.cache[lf.path]


def _only_answer(index_types: dict, column: str, index_type: str, fields: set[str]) -> bool:
    """The file's only index on the predicate's columns (``index_types``: its column -> kinds) is
    this one: explain's answer is its own."""
    kinds = [(c, t) for c, ts in (index_types or {}).items() for t in ts if c in fields]
    return len(kinds) == 1 and kinds[0][1] == index_type


class Taken(Sequence):
    """``values[rows[i]]`` by position, read when asked for: a column's values on some files (a raw
    index result is decoded only for a file advise reads it of)."""

    def __init__(self, values: Sequence, rows: np.ndarray):
        self.values, self.rows = values, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, at):
        if isinstance(at, slice):
            return [self.values[i] for i in self.rows[at].tolist()]
        return self.values[int(self.rows[at])]


class ReachedDecisions(Sequence):
    """The decisions of the files of explain's columns at ``rows`` (those reaching the index
    stage): :func:`measure_existing` reads their fields off the columns; a decision object is made
    only when a caller indexes or iterates them."""

    def __init__(self, files: DecisionColumns, rows: np.ndarray):
        self.files, self.rows, self._made = files, rows, None

    def facts(self) -> tuple[Sequence[str], list, Sequence]:
        """(path, index types, index decision) of each file, in order (paths and decisions read when
        asked for)."""
        kinds = self.files.index_types()
        return Taken(self.files.objects("path"), self.rows), [kinds[i] for i in self.rows.tolist()], \
            Taken(self.files.objects("index_decision"), self.rows)

    def _all(self) -> list:
        if self._made is None:
            self._made = self.files.rows_of(self.rows.tolist())
        return self._made

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, at):
        return self._all()[at]

    def __iter__(self):
        return iter(self._all())


def _facts(decisions) -> tuple[list[str], list, list]:
    """:meth:`ReachedDecisions.facts` of decision objects (those that reach the index stage)."""
    reached = [fd for fd in decisions if fd.skipped_by in REACHED_INDEX]
    return [fd.path for fd in reached], [fd.index_types for fd in reached], [fd.index_decision for fd in reached]


_ALONE_SLICE = 4096  # files whose blobs measure_existing makes at once to read an index alone


def measure_existing(table, schema, run: QueryRun, ex, existing: list[ExistingIndex],
                     deleted: DeletedPositions, problems: list[Problem], details: bool = False,
                     reached: Sequence | None = None) -> None:
    """What each index on the query's columns skips on its own, added to its tally (``ex``: the
    query's explanation, read here and then dropped by the caller; ``reached``: its decisions of
    the files that reach the index stage, in its order, when the caller has them already: a
    :class:`ReachedDecisions` is read on its columns, no decision object made).

    On arrays over the files ``run`` reaches (``run.reached``, their plan rows): each index's census
    row per file (:meth:`Blobs.by_file`), and where the file's only index on the predicate's columns
    is this one, explain's own answer (its skip flag; the bitmap of an answer that keeps the file);
    a blob is made, and its index read alone, only for a file with another index on those columns."""
    fields = ex.predicate.fields()
    weight = run.weight
    facts = None
    own_answer: dict[tuple, bool] = {}  # (file's kinds, file's column, schema id) -> explain's answer is this index's
    for g in existing:
        if g.column not in fields:
            continue
        g.filtered_by.extend(run.names)
        rows = 0
        skipped_at: list[np.ndarray] = []  # positions among the reached files this index skips
        if ex.index_used and len(run.reached):
            if facts is None:
                facts = reached.facts() if isinstance(reached, ReachedDecisions) else \
                    _facts(ex.files if reached is None else reached)
                kind_ids = np.fromiter(map(id, facts[1]), np.int64, len(facts[1]))
            census_at = g.blobs.by_file()[run.reached]
            has = np.flatnonzero(census_at >= 0)  # positions of the reached files that carry this index
            crow = census_at[has]
            own = _own_answers(table, schema, g, fields, facts[1], kind_ids[has], crow, own_answer)
            mine = has[own]  # explain already asked this index alone: its answer
            skip = run.index_skipped[mine]
            skipped_at.append(mine[skip])
            known = facts[2]  # read only where it keeps the file (decoded then, on Spark)
            for at in mine[~skip].tolist():
                decision = known[at]
                if isinstance(decision, BitmapResult):
                    rows += max(int(run.base_rows[at]) - len(decision.bitmap), 0)
            alone, alone_rows = has[~own], crow[~own]
            for lo in range(0, len(alone), _ALONE_SLICE):
                part = alone[lo:lo + _ALONE_SLICE]
                hit, kept_rows = _read_alone(table, schema, ex.predicate, g.blobs.census_blobs(),
                                             alone_rows[lo:lo + _ALONE_SLICE], deleted, problems, run.base_rows[part])
                skipped_at.append(part[hit])
                rows += kept_rows
        gone = np.sort(np.concatenate(skipped_at)) if skipped_at else np.zeros(0, np.int64)
        files, nbytes = len(gone), int(run.sizes[gone].sum())
        rows += int(run.base_rows[gone].sum())
        g.skipped.add(files, rows, nbytes, weight)
        entry = {"query": run.name, "weight": weight, "files_skipped": files, "rows_skipped": rows,
                 "bytes_skipped": nbytes}
        if details:
            entry["skipped_files"] = [facts[0][at] for at in gone[:settings().details_files].tolist()]
        g.queries.append(entry)


def _own_answers(table, schema, g: ExistingIndex, fields: set[str], kinds: Sequence, kind_ids: np.ndarray,
                 crow: np.ndarray, memo: dict[tuple, bool]) -> np.ndarray:
    """Whether explain's answer of each file (census rows ``crow`` of ``g``, their files' index kinds
    ``kinds`` by ``kind_ids``) is this index's alone: the file's only index on the predicate's
    columns. Worked out once per distinct (kinds, column as the file names it, file schema)."""
    if not len(crow):
        return np.zeros(0, bool)
    census = g.blobs.census_blobs().census
    names, name_codes = codes_of(census["column_name"])
    sids, sid_codes = codes_of(census["schema_id"])
    _ids, kind_codes = np.unique(kind_ids, return_inverse=True)
    key = (kind_codes.reshape(-1).astype(np.int64) * len(names) + name_codes[crow]) * len(sids) + sid_codes[crow]
    distinct, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    kind_of = {id(k): k for k in kinds}
    answers = np.zeros(len(distinct), bool)
    for d, at in enumerate(first.tolist()):
        file_kinds = kind_of[int(kind_ids[at])]
        column, sid = names[name_codes[crow[at]]], sids[sid_codes[crow[at]]]
        memo_key = (id(file_kinds), column, sid)
        if memo_key not in memo:
            fs = table.schema_or_latest(sid, census["file_path"][int(crow[at])].as_py())
            in_file = devolved_fields(schema, fs, fields)
            memo[memo_key] = bool(file_kinds) and column in file_kinds and \
                _only_answer(file_kinds, column, g.index_type, in_file)
        answers[d] = memo[memo_key]
    return answers[inverse.reshape(-1)]


def _read_alone(table, schema, predicate, blobs: CensusBlobs, census_rows: np.ndarray, deleted: DeletedPositions,
                problems: list[Problem], base: np.ndarray) -> tuple[np.ndarray, int]:
    """Each file's index (census rows ``census_rows``) read alone, as the read path decides with it:
    which of the files it skips, and the rows a bitmap answer leaves out of those it keeps."""
    hit = np.zeros(len(census_rows), bool)
    kept_rows = 0
    for j, blob in enumerate(blobs.blobs_at(census_rows)):
        lf = blob.file
        try:
            decision = _index_alone(table, schema, lf, blob, predicate, deleted(lf))
        except IndexCoreError as exc:
            problems.append(Problem(lf.index_path or lf.path, exc.structure or "file index", exc.message))
            continue
        if decision is None:
            continue
        if not decision.remain():
            hit[j] = True
        elif isinstance(decision, BitmapResult):
            kept_rows += max(int(base[j]) - len(decision.bitmap), 0)
    return hit, kept_rows


def devolved_fields(schema, file_schema, fields: set[str]) -> set[str]:
    """The predicate's table columns as a file's schema names them."""
    fmap = field_map(schema, file_schema)
    return {fmap[f] for f in fields if fmap.get(f)}


def verdicts(table, snapshot_id, existing: list[ExistingIndex], runs: list[QueryRun] | None,
             problems: list[Problem]) -> None:
    """Findings per index; ``runs`` None judges without a workload (no "never prunes")."""
    index_used = all(r.index_used for r in runs or () if r.ok)
    stats_by_column: dict[str, int] = {}
    for r in runs or ():
        if r.ok:
            for c in r.predicate.fields():
                stats_by_column[c] = stats_by_column.get(c, 0) + r.stats_pruned
    for g in existing:
        if g.wrong_column:
            g.findings.append({"verdict": "wrong column", "files": len(g.wrong_column),
                               "message": f"{len(g.wrong_column)} file(s) carry a {g.index_type} index whose "
                                          f"column does not match the file's schema: {g.wrong_column[0]['reason']}"})
        if not g.blobs or runs is None:
            pass
        elif not index_used:
            g.findings.append({"verdict": NEVER_PRUNES, "message": "the read path does not use file indexes "
                               "here (primary-key table merging on read, or file-index.read.enabled=false)"})
        elif not g.filtered_by:
            g.findings.append({"verdict": NOT_IN_WORKLOAD, "message": f"no query of the workload filters on "
                               f"{g.column}: kept (ask to drop indexes the workload does not use)"})
        elif g.skipped.files == 0:
            n = len(g.filtered_by)
            quer = f"{n} quer{'y' if n == 1 else 'ies'} filter{'s' if n == 1 else ''} on {g.column}"
            within = f" ({g.skipped.rows} rows within files)" if g.skipped.rows else ""
            if stats_by_column.get(g.column):
                g.findings.append({"verdict": STATS_PRUNE, "stats_pruned_files": stats_by_column[g.column],
                                   "message": f"{quer}: min/max statistics already prune "
                                              f"{stats_by_column[g.column]} file(s) and the index skips none of "
                                              f"the files they leave{within}"})
            else:
                g.findings.append({"verdict": NEVER_PRUNES,
                                   "message": f"{quer}, but it skipped no file{within}"})
        if g.blobs and not g.configured:
            useful = g.skipped.files > 0
            g.findings.append({"verdict": "stale", "files": len(g.blobs), "readd": useful,
                               "message": f"{len(g.blobs)} file(s) carry it but file-index.{g.index_type}.columns "
                                          f"no longer lists {g.column}" + (
                                              f"; it still skips {g.skipped.files} file(s) for the workload: "
                                              "add it back before the rewrite removes it" if useful else "")})
            if useful:
                g.suggested_options = _built_with(table, g)
        if g.missing:
            g.findings.append({"verdict": "missing", "files": len(g.missing),
                               "message": f"configured but absent from {len(g.missing)} of {g.live_files} live files"})
        if g.index_type == BLOOM_FILTER.name and g.blobs:
            _bloom_sizing(table, g)


def _built_with(table, g: ExistingIndex) -> dict[str, str]:
    """The options a stale index was built with (its files' schema)."""
    blob = next(iter(g.blobs.values()))
    try:
        return dict(table.file_schema(blob.file).file_index_options(blob.column, g.index_type))
    except (IndexCoreError, KeyError):
        return {}


def _bloom_sizing(table, g: ExistingIndex) -> None:
    """The column's sizing verdict (:func:`.bloom_sizing.column_sizing`) as a finding: resize
    (``suggested_options``), or compact when file-size skew is the cause."""
    if isinstance(g.blobs, Blobs):  # judged on the census's columns: a blob made only where bits are read
        census, at = g.blobs.census_rows()
        rows = census.select(["file_path", "schema_id", "record_count", "column_name", "index_size_in_bytes",
                              "error", "is_empty"]).take(pa.array(at, pa.int64()))
        rows = rows.filter(pc.and_kleene(pc.is_null(rows["error"]), pc.invert(pc.fill_null(rows["is_empty"], False))))
        sizing = sizing_of(g.column, rows_tally(table, rows, g.blobs.files_of))
    else:
        sizing = column_sizing(table, g.column, ((b.file, b.column, b.size) for b in g.blobs.values()
                                                 if b.error is None and not b.empty))
    if sizing is None or sizing.verdict == OK:
        return
    if sizing.cause != SKEW:
        g.suggested_options = {"items": str(sizing.recommended_items)}
    finding = {"verdict": sizing.verdict, "message": sizing.message()}
    if sizing.verdict == OVERSIZED:
        finding.update(stored_bytes=sizing.bytes, needed_bytes=sizing.needed_bytes)
    else:
        finding.update(files=sizing.over_fpp_files, cause=sizing.cause)
    g.findings.append(finding)

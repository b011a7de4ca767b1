"""Rules a table must keep after every commit, for a CI gate (``python -m indexcore check``).

Rules file, text: one rule a line, ``name key=value ...`` (values may be quoted, shell-style),
``#`` starts a comment. Or JSON: a list of ``{"rule": name, key: value, ...}`` (or
``{"rules": [...]}``). Rules:

* ``configured-indexes``: every live file carries every index ``file-index.<type>.columns``
  configures (files whose schema lacks the column are exempt).
* ``dv-density max=0.2``: deleted rows / rows below ``max`` in every partition x bucket.
* ``bloom-fpp max=0.05 [which=estimated|configured]``: no bloom filter above that false
  positive probability, as estimated from its bits (default) or as configured.
* ``pruning snapshot=S (where="SQL" | query=NAME workload=FILE) [metric=rows|files]
  [tolerance=0]``: the fraction of rows (or files) the condition prunes now is not below
  the fraction at snapshot ``S`` minus ``tolerance``. ``workload`` is relative to the rules file.
"""

from __future__ import annotations

import json
import math
import os
import shlex
from typing import Any

from indexcore.analysis.advise import index_inventory
from indexcore.analysis.balance import dv_by_bucket
from indexcore.analysis.diff import pruning
from indexcore.analysis.workload import read_workload
from indexcore.config import parse_pairs
from indexcore.errors import IndexCoreError, PredicateError
from indexcore.views import view

RULES = ("configured-indexes", "dv-density", "bloom-fpp", "pruning")


def parse_rules(text: str, base_dir: str = ".") -> list[dict[str, Any]]:
    """Rules from a rules file's text (JSON or one ``name key=value`` rule per line)."""
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        try:
            doc = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise PredicateError(f"rules file is not valid JSON: {exc}") from exc
        items = doc.get("rules", []) if isinstance(doc, dict) else doc
        if not isinstance(items, list) or not all(isinstance(r, dict) and "rule" in r for r in items):
            raise PredicateError('JSON rules must be a list of {"rule": name, ...} objects')
        rules = [{str(k): v for k, v in r.items()} for r in items]
    else:
        rules = []
        for n, line in enumerate(text.splitlines(), 1):
            try:
                words = shlex.split(line, comments=True)
            except ValueError as exc:
                raise PredicateError(f"rules line {n}: {exc}") from exc
            if not words:
                continue
            rules.append({"rule": words[0], "line": n, **parse_pairs(words[1:], f"rules line {n}", PredicateError)})
    if not rules:
        raise PredicateError("the rules file holds no rule (it is empty or holds only comments)")
    for r in rules:
        if r["rule"] not in RULES:
            raise PredicateError(f"unknown rule {r['rule']!r} (rules: {', '.join(RULES)})")
        if "workload" in r:
            r["workload"] = os.path.join(base_dir, str(r["workload"]))
    return rules


def read_rules(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise PredicateError(f"cannot read rules file {path!r}: {exc}") from exc
    return parse_rules(text, os.path.dirname(os.path.abspath(path)))


def _number(rule: dict, key: str, default: float | None = None) -> float:
    value = rule.get(key, default)
    if value is None:
        raise PredicateError(f"rule {rule['rule']} needs {key}=...")
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise PredicateError(f"rule {rule['rule']}: {key}={value!r} is not a number") from exc
    if not math.isfinite(number):  # nan would switch the rule off, inf would pass everything
        raise PredicateError(f"rule {rule['rule']}: {key}={value!r} is not a finite number")
    return number


def _configured_indexes(table, sid, rule) -> list[dict]:
    inventory, _ = index_inventory(table, sid)
    failures: dict[str, list[str]] = {}
    for g in inventory:
        for path in g.missing:
            failures.setdefault(path, []).append(f"{g.column}:{g.index_type}")
    return [{"path": p, "missing": sorted(v)} for p, v in sorted(failures.items())]


def _dv_density(table, sid, rule) -> list[dict]:
    limit = _number(rule, "max")
    buckets = dv_by_bucket(view(table, "deletion_vectors", sid).to_pandas())
    return [{"partition": r.partition, "bucket": int(r.bucket), "density": round(float(r.density), 6),
             "deleted": int(r.deleted), "rows": int(r.row_count)}
            for r in buckets.itertuples() if float(r.density) >= limit]


def _bloom_fpp(table, sid, rule) -> list[dict]:
    limit = _number(rule, "max")
    which = str(rule.get("which", "estimated"))
    if which not in ("estimated", "configured"):
        raise PredicateError(f"rule bloom-fpp: which={which!r} is neither estimated nor configured")
    out = []
    for r in view(table, "bloom_filters", sid).to_pandas().itertuples():
        if r.error and not isinstance(r.error, float):
            out.append({"file": r.file_name, "column": r.column, "error": r.error})
            continue
        value = r.estimated_fpp if which == "estimated" else r.configured_fpp
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if bool(r.saturated) or float(value) > limit:
            out.append({"file": r.file_name, "column": r.column, f"{which}_fpp": 1.0 if r.saturated else
                        round(float(value), 6), "configured_items": r.configured_items,
                        "recommended_items": r.recommended_items})
    return out


def _pruning(table, sid, rule) -> list[dict]:
    if "snapshot" not in rule:
        raise PredicateError("rule pruning needs snapshot=S")
    then = int(_number(rule, "snapshot"))
    metric = str(rule.get("metric", "rows"))
    if metric not in ("rows", "files"):
        raise PredicateError(f"rule pruning: metric={metric!r} is neither rows nor files")
    tolerance = _number(rule, "tolerance", 0.0)
    where = rule.get("where")
    if where is None:
        if "query" not in rule or "workload" not in rule:
            raise PredicateError("rule pruning needs where=SQL, or query=NAME with workload=FILE")
        queries = {q.name: q for q in read_workload(rule["workload"])}
        if rule["query"] not in queries:
            raise PredicateError(f"rule pruning: no query {rule['query']!r} in {rule['workload']}")
        where = queries[rule["query"]].text
    before = pruning(table, where, then)
    now = pruning(table, where, sid)
    key = f"pruned_{metric}"
    if now[key] < before[key] - tolerance:
        return [{"where": where, "metric": metric, "then": before, "now": now}]
    return []


_CHECKS = {"configured-indexes": _configured_indexes, "dv-density": _dv_density, "bloom-fpp": _bloom_fpp,
           "pruning": _pruning}


def check(table, rules: list[dict[str, Any]], snapshot_id: int | None = None) -> dict[str, Any]:
    """Test every rule at a snapshot (latest by default): ``{"passed", "errors", "rules": [...]}``.

    A rule that cannot be evaluated (bad SQL, a missing parameter, a snapshot that does not
    exist) fails with an ``error`` and is counted in ``errors`` (the CLI then exits 2, bad input,
    rather than 1); the others still run.
    """
    snap = table.snapshot(snapshot_id)
    sid = snap.id if snap else None
    results = []
    for rule in rules:
        entry = {k: v for k, v in rule.items()}
        try:
            failures = _CHECKS[rule["rule"]](table, sid, rule)
            entry.update({"passed": not failures, "failures": failures})
        except IndexCoreError as exc:
            entry.update({"passed": False, "error": exc.message, "failures": []})
        results.append(entry)
    return {"table": table.name, "snapshot": sid, "passed": all(r["passed"] for r in results),
            "errors": sum(1 for r in results if "error" in r), "rules": results}

"""Explain's frames read from its columns (issue 30 item 5): the What-if page's per-file frame and
its "why these files are read" groups come from :class:`DecisionColumns` without a
:class:`FileDecision` per file, equal to the frames made from the decision objects."""

from __future__ import annotations

import dataclasses

import pytest
from test_explain import CASES, _table, warehouse  # noqa: F401 - the fixture is used by name

from indexcore.frames.what_if import explanation_frames, why_read
from indexcore.scan import FileDecision, explain
from indexcore.scan.decision_columns import DecisionColumns


@pytest.mark.parametrize("name", sorted(CASES))
def test_frames_from_the_columns_equal_those_from_the_objects(warehouse, name, monkeypatch):  # noqa: F811
    """Every case's per-file frame (values and dtypes), why-read groups and summary, made on the
    columns with no decision object made, equal those made from the listed decisions (a list,
    as Spark's parts give them); verified runs included (matching rows, verified reasons)."""
    table = _table(warehouse, name)
    quick = FileDecision.from_record
    made: list[int] = []
    monkeypatch.setattr(FileDecision, "from_record", classmethod(lambda cls, r: (made.append(1), quick(r))[1]))
    for verify, sql in [(False, s) for s in CASES[name]] + [(True, s) for s in CASES[name][:2]]:
        ex = explain(table, sql, verify=verify)
        assert isinstance(ex.files, DecisionColumns)
        made.clear()
        got = explanation_frames(table, ex)
        assert not made, "the frames made decision objects"
        objects = dataclasses.replace(ex, files=list(ex.files))
        want = explanation_frames(table, objects)
        assert list(got["files"].columns) == list(want["files"].columns)
        assert got["files"].dtypes.equals(want["files"].dtypes)
        assert got["files"].equals(want["files"]), (name, sql)
        assert got["why"]["reasons"].equals(want["why"]["reasons"]) and got["why"]["summary"] == want["why"]["summary"]
        assert any(c.endswith(" min") for c in got["files"].columns)  # the stats columns were compared


def test_an_empty_explanation_has_the_objects_frame(warehouse):  # noqa: F811
    """No file (a partition filter that keeps none): the same empty frame and summary both ways."""
    table = _table(warehouse, "append_with_bitmap")
    ex = explain(table, "f0 = 'Bob'", paths=[])
    assert isinstance(ex.files, DecisionColumns) and len(ex.files) == 0
    objects = dataclasses.replace(ex, files=[])
    assert ex.to_frame().equals(objects.to_frame()) and list(ex.to_frame().columns) == list(objects.to_frame().columns)
    assert why_read(ex)["summary"] == why_read(objects)["summary"] == "The snapshot has no live file."

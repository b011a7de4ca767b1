"""Task results as plain JSON: how Spark Connect brings them back without pickles.

Unpickling bytes from a remote server would let that server run code here, so a task's result
travels as JSON (:func:`plain_dumps`) in which tuples, sets, bytes, decimals, dates, enums,
dataclasses and bitmaps keep their type through tags; :func:`plain_loads` rebuilds only
indexcore's own classes and fails on anything else.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import importlib
import json
from enum import Enum
from typing import Any

from pyroaring import BitMap

from indexcore.errors import IndexCoreError
from indexcore.formats.base import REMAIN, SKIP, BitmapResult
from indexcore.scan.decision_columns import DecisionColumns

_PLAIN_TAG = "__indexcore__"


def plain_dumps(value: Any) -> str:
    """A task result as JSON; tuples, bytes, decimals, dates and sets keep their type."""

    def tag(v: Any) -> Any:
        if isinstance(v, Enum):
            return {_PLAIN_TAG: "enum", "type": _type_name(v), "value": v.value}
        if v is REMAIN or v is SKIP:
            return {_PLAIN_TAG: "result", "name": v.name}
        if isinstance(v, BitmapResult):
            return {_PLAIN_TAG: "bitmap", "b64": base64.b64encode(v.bitmap.serialize()).decode()}
        if isinstance(v, DecisionColumns):  # explain's records as columns travel as their decisions
            return [tag(x) for x in v]
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return {_PLAIN_TAG: "dataclass", "type": _type_name(v),
                    "fields": {f.name: tag(getattr(v, f.name)) for f in dataclasses.fields(v)}}
        if isinstance(v, dict):
            if all(isinstance(k, str) for k in v):
                return {k: tag(x) for k, x in v.items()}
            return {_PLAIN_TAG: "dict", "items": [[tag(k), tag(x)] for k, x in v.items()]}
        if isinstance(v, list):
            return [tag(x) for x in v]
        if isinstance(v, tuple):
            return {_PLAIN_TAG: "tuple", "items": [tag(x) for x in v]}
        if isinstance(v, set | frozenset):
            return {_PLAIN_TAG: "set", "items": [tag(x) for x in v]}
        if isinstance(v, bytes | bytearray):
            return {_PLAIN_TAG: "bytes", "b64": base64.b64encode(bytes(v)).decode()}
        if isinstance(v, decimal.Decimal):
            return {_PLAIN_TAG: "decimal", "text": str(v)}
        if isinstance(v, dt.datetime | dt.date | dt.time):
            return {_PLAIN_TAG: type(v).__name__, "text": v.isoformat()}
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            return {_PLAIN_TAG: "float", "text": repr(v)}
        if v is None or isinstance(v, str | int | float | bool):
            return v
        raise TypeError(f"a Spark task result holds a {type(v).__name__}, not plain data")

    return json.dumps(tag(value), allow_nan=False)


def _type_name(value: Any) -> str:
    cls = type(value)
    return f"{cls.__module__}:{cls.__qualname__}"


def _our_type(name: str) -> type:
    """A class named in a task result: only indexcore's own, looked up, never imported by path."""
    module, _, qualname = name.partition(":")
    if not module.startswith("indexcore.") or not qualname.isidentifier():
        raise TypeError(f"{name!r} is not an indexcore type")
    cls = getattr(importlib.import_module(module), qualname, None)
    if not isinstance(cls, type):
        raise TypeError(f"{name!r} is not a class")
    return cls


def plain_loads(text: str) -> Any:
    """The inverse of :func:`plain_dumps`; anything else in the text is an error, not code."""

    def dataclass_of(o: dict) -> Any:
        cls = _our_type(o["type"])
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{o['type']} is not a dataclass")
        return cls(**{k: untag(x) for k, x in o["fields"].items()})

    def enum_of(o: dict) -> Any:
        cls = _our_type(o["type"])
        if not issubclass(cls, Enum):
            raise TypeError(f"{o['type']} is not an enum")
        return cls(o["value"])

    kinds = {"dataclass": dataclass_of, "enum": enum_of,
             "result": lambda o: {"REMAIN": REMAIN, "SKIP": SKIP}[o["name"]],
             "bitmap": lambda o: BitmapResult(BitMap.deserialize(base64.b64decode(o["b64"]))),
             "tuple": lambda o: tuple(untag(x) for x in o["items"]),
             "set": lambda o: {untag(x) for x in o["items"]},
             "dict": lambda o: {untag(k): untag(x) for k, x in o["items"]},
             "bytes": lambda o: base64.b64decode(o["b64"]),
             "decimal": lambda o: decimal.Decimal(o["text"]),
             "datetime": lambda o: dt.datetime.fromisoformat(o["text"]),
             "date": lambda o: dt.date.fromisoformat(o["text"]),
             "time": lambda o: dt.time.fromisoformat(o["text"]),
             "float": lambda o: float(o["text"])}

    def untag(v: Any) -> Any:
        if isinstance(v, list):
            return [untag(x) for x in v]
        if isinstance(v, dict):
            kind = v.get(_PLAIN_TAG)
            if kind is None:
                return {k: untag(x) for k, x in v.items()}
            return kinds[kind](v)
        return v

    try:
        return untag(json.loads(text))
    except (ValueError, KeyError, TypeError) as exc:
        raise IndexCoreError(f"a Spark task returned a result that is not plain data: {exc}") from exc

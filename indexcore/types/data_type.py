"""Paimon's ``DataType`` and ``DataField``, parsed from their SQL strings (``DataTypeParser``) and
from the schema JSON."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from indexcore.errors import UnsupportedError

INTEGER_ROOTS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
FLOAT_ROOTS = ("FLOAT", "DOUBLE")
STRING_ROOTS = ("CHAR", "VARCHAR")
BINARY_ROOTS = ("BINARY", "VARBINARY")
TIMESTAMP_ROOTS = ("TIMESTAMP", "TIMESTAMP_LTZ")
INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_ALIASES = {"INTEGER": "INT", "STRING": "VARCHAR", "BYTES": "VARBINARY", "DEC": "DECIMAL",
            "NUMERIC": "DECIMAL", "REAL": "FLOAT", "DOUBLE PRECISION": "DOUBLE"}
MAX_LENGTH = 2_147_483_647


@dataclass(frozen=True)
class DataField:
    """A named field of a ROW type or a table schema (``id`` is Paimon's field id)."""

    id: int
    name: str
    type: DataType
    description: str | None = None


@dataclass(frozen=True)
class DataType:
    """A Paimon data type. ``root`` is the canonical type name (``STRING`` is ``VARCHAR``)."""

    root: str
    nullable: bool = True
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    element: DataType | None = None
    key: DataType | None = None
    value: DataType | None = None
    fields: tuple[DataField, ...] = field(default=())

    @property
    def is_ltz(self) -> bool:
        return self.root == "TIMESTAMP_LTZ"

    @property
    def is_timestamp(self) -> bool:
        return self.root in TIMESTAMP_ROOTS

    @property
    def is_string(self) -> bool:
        return self.root in STRING_ROOTS

    @property
    def is_nested(self) -> bool:
        return self.root in ("ARRAY", "MAP", "MULTISET", "ROW", "VECTOR")

    def __str__(self) -> str:
        return self.sql()

    def sql(self) -> str:
        r = self.root
        if r == "VARCHAR" and self.length in (None, MAX_LENGTH):
            s = "STRING"
        elif r == "VARBINARY" and self.length in (None, MAX_LENGTH):
            s = "BYTES"
        elif r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            s = f"{r}({self.length})"
        elif r == "DECIMAL":
            s = f"DECIMAL({self.precision}, {self.scale})"
        elif r in ("TIME", "TIMESTAMP"):
            s = f"{r}({self.precision})"
        elif r == "TIMESTAMP_LTZ":
            s = f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        elif r in ("ARRAY", "MULTISET"):
            s = f"{r}<{self.element.sql()}>"
        elif r == "VECTOR":
            s = f"VECTOR<{self.element.sql()}, {self.length}>"
        elif r == "MAP":
            s = f"MAP<{self.key.sql()}, {self.value.sql()}>"
        elif r == "ROW":
            s = "ROW<" + ", ".join(f"{f.name} {f.type.sql()}" for f in self.fields) + ">"
        else:
            s = r
        return s if self.nullable else s + " NOT NULL"


_TOKEN = re.compile(r"\s*(<|>|\(|\)|,|`[^`]*`|'[^']*'|[A-Za-z_][A-Za-z_0-9]*|\d+)")


class _TypeParser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m:
                raise UnsupportedError(f"cannot parse data type {self.text!r} near {text[pos:]!r}")
            self.tokens.append(m.group(1))
            pos = m.end()
            while pos < len(text) and text[pos].isspace():
                pos += 1
        self.i = 0

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else None

    def take(self, expect: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expect is not None and tok.upper() != expect):
            raise UnsupportedError(f"cannot parse data type {self.text!r}: expected {expect or 'more'}")
        self.i += 1
        return tok

    def ints(self) -> list[int]:
        out = []
        if self.peek() == "(":
            self.take()
            while True:
                out.append(int(self.take()))
                if self.peek() == ",":
                    self.take()
                    continue
                self.take(")")
                break
        return out

    def parse(self) -> DataType:
        word = self.take().upper()
        if word == "DOUBLE" and (self.peek() or "").upper() == "PRECISION":
            self.take()
        if word in ("CHARACTER",) and (self.peek() or "").upper() == "VARYING":
            self.take()
            word = "VARCHAR"
        root = _ALIASES.get(word, word)
        args = self.ints() if root not in ("ARRAY", "MAP", "MULTISET", "ROW", "VECTOR") else []
        kw: dict[str, Any] = {}
        if root in ("CHAR", "BINARY"):
            kw["length"] = args[0] if args else 1
        elif root in ("VARCHAR", "VARBINARY"):
            kw["length"] = args[0] if args else MAX_LENGTH
        elif root == "DECIMAL":
            kw["precision"] = args[0] if args else 10
            kw["scale"] = args[1] if len(args) > 1 else 0
        elif root in ("TIME",):
            kw["precision"] = args[0] if args else 0
        elif root in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIMESTAMP_WITH_LOCAL_TIME_ZONE"):
            kw["precision"] = args[0] if args else 6
            if root != "TIMESTAMP":
                root = "TIMESTAMP_LTZ"
            elif [t.upper() for t in self.tokens[self.i:self.i + 4]] == ["WITH", "LOCAL", "TIME", "ZONE"]:
                self.i += 4
                root = "TIMESTAMP_LTZ"
            elif [t.upper() for t in self.tokens[self.i:self.i + 3]] == ["WITHOUT", "TIME", "ZONE"]:
                self.i += 3
        elif root in ("ARRAY", "MULTISET"):
            self.take("<")
            kw["element"] = self.parse()
            self.take(">")
        elif root == "VECTOR":  # VECTOR<FLOAT, 768>: a fixed-length array of numbers
            self.take("<")
            kw["element"] = self.parse()
            self.take(",")
            kw["length"] = int(self.take())
            self.take(">")
        elif root == "MAP":
            self.take("<")
            kw["key"] = self.parse()
            self.take(",")
            kw["value"] = self.parse()
            self.take(">")
        elif root == "ROW":
            self.take("<")
            fields = []
            while self.peek() != ">":
                name = self.take().strip("`")
                fields.append(DataField(len(fields), name, self.parse()))
                if self.peek() and self.peek().startswith("'"):
                    self.take()
                if self.peek() == ",":
                    self.take()
            self.take(">")
            kw["fields"] = tuple(fields)
        elif root not in ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
                          "DATE", "VARIANT", "BLOB"):
            raise UnsupportedError(f"unknown data type {self.text!r}")
        nullable = True
        if (self.peek() or "").upper() == "NOT" and (self.peek(1) or "").upper() == "NULL":
            self.i += 2
            nullable = False
        elif (self.peek() or "").upper() == "NULL":
            self.i += 1
        return DataType(root, nullable, **kw)


def parse_type(text: str) -> DataType:
    """Parse a Paimon SQL type string such as ``TIMESTAMP(6) WITH LOCAL TIME ZONE NOT NULL``."""
    parser = _TypeParser(text)
    dtype = parser.parse()
    if parser.peek() is not None:
        raise UnsupportedError(f"cannot parse data type {text!r}: trailing {parser.peek()!r}")
    return dtype


def type_from_json(obj: Any) -> DataType:
    """A type as Paimon's schema JSON writes it: a string, or an object for nested types."""
    if isinstance(obj, str):
        return parse_type(obj)
    if not isinstance(obj, dict) or "type" not in obj:
        raise UnsupportedError(f"unknown data type {obj!r}")
    text = obj["type"]
    nullable = not text.upper().endswith("NOT NULL")
    root = text.upper().replace("NOT NULL", "").strip()
    if root in ("ARRAY", "MULTISET"):
        return DataType(root, nullable, element=type_from_json(obj["element"]))
    if root == "VECTOR":
        return DataType(root, nullable, element=type_from_json(obj["element"]), length=int(obj["length"]))
    if root == "MAP":
        return DataType(root, nullable, key=type_from_json(obj["key"]), value=type_from_json(obj["value"]))
    if root == "ROW":
        fields = tuple(DataField(f["id"], f["name"], field_type_from_json(f["name"], f["type"]), f.get("description"))
                       for f in obj["fields"])
        return DataType(root, nullable, fields=fields)
    return parse_type(text)


def field_type_from_json(name: str, obj: Any) -> DataType:
    """:func:`type_from_json` for one field; an unknown type names the field and the type."""
    try:
        return type_from_json(obj)
    except UnsupportedError as exc:
        raise UnsupportedError(f"field {name!r} has type {json.dumps(obj) if not isinstance(obj, str) else obj}"
                               f" that indexcore does not know: {exc.message}") from exc

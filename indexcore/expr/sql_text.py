"""The ``WHERE`` text as sqlglot reads it: our dialect, the bounds checked before sqlglot parses
(length, nesting, signs, numeric literal size), and a node's SQL for messages."""

from __future__ import annotations

import sqlglot
from sqlglot import exp, tokens
from sqlglot.dialects.dialect import Dialect

from indexcore.errors import PredicateError


class WhereDialect(Dialect):
    """Standard SQL strings (``'it''s'``), ``"x"`` and `` `x` `` identifiers, ``X'0a'`` bytes."""

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS = ['"', "`"]
        HEX_STRINGS = [("x'", "'"), ("X'", "'")]


def sql_of(node: exp.Expression) -> str:
    """A node's SQL for a message (its repr where sqlglot cannot print it)."""
    try:
        return node.sql()
    except Exception:  # noqa: BLE001 - display only
        return repr(node)


# Bounds on WHERE text, checked before sqlglot parses it: sqlglot's recursive descent spends
# about 22 Python frames per parenthesis and 10 per NOT, so nesting is what overflows the stack.
MAX_WHERE_CHARS = 100_000
MAX_NESTING = 24  # open parentheses plus the prefix NOTs still open
MAX_SIGNS = 64  # consecutive unary + / - signs
MAX_NUMBER_CHARS = 100  # digits, point and exponent of one numeric literal
MAX_EXPONENT = 400  # |adjusted exponent| of a numeric literal: beyond DOUBLE and DECIMAL(38)

_SIGN_AFTER = {tokens.TokenType.L_PAREN, tokens.TokenType.COMMA, tokens.TokenType.NOT, tokens.TokenType.DASH,
               tokens.TokenType.PLUS, tokens.TokenType.EQ, tokens.TokenType.NEQ, tokens.TokenType.LT,
               tokens.TokenType.LTE, tokens.TokenType.GT, tokens.TokenType.GTE, tokens.TokenType.AND,
               tokens.TokenType.OR, tokens.TokenType.BETWEEN, tokens.TokenType.IN, None}
_PREFIX_AFTER = {tokens.TokenType.L_PAREN, tokens.TokenType.NOT, tokens.TokenType.AND, tokens.TokenType.OR, None}


def check_sql_bounds(text: str, what: str = "WHERE condition", sql: str | None = None,
                     dialect: Dialect | None = None) -> list[tokens.Token]:
    """The text's tokens (in ``dialect``, default ours); PredicateError when it is too long or
    nests deeper than sqlglot can parse (``what`` names the text in the message: a WHERE
    condition, a workload query). Tokenizing is linear and iterative, so a hostile text costs no
    more than its length; a text the dialect cannot tokenize raises sqlglot's TokenError as
    PredicateError."""
    sql = text if sql is None else sql
    if len(text) > MAX_WHERE_CHARS:
        raise PredicateError(f"{what} of {len(text):,} characters is longer than {MAX_WHERE_CHARS:,}")
    try:
        toks = (dialect or WhereDialect()).tokenize(text)
    except sqlglot.errors.TokenError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PredicateError(f"cannot parse {what} {sql[:200]!r}: {first}") from exc
    tt = tokens.TokenType
    # prefix NOTs open per parenthesis level; a NOT's operand ends at the next AND / OR there
    open_nots = [0]
    deepest = signs = 0
    previous = None
    for tok in toks:
        kind = tok.token_type
        if kind == tt.L_PAREN:
            open_nots.append(0)
        elif kind == tt.R_PAREN:
            if len(open_nots) > 1:
                open_nots.pop()
        elif kind in (tt.AND, tt.OR):
            open_nots[-1] = 0
        elif kind == tt.NOT and previous in _PREFIX_AFTER:
            open_nots[-1] += 1
        if kind in (tt.DASH, tt.PLUS) and previous in _SIGN_AFTER:
            signs += 1
            if signs > MAX_SIGNS:
                raise PredicateError(f"more than {MAX_SIGNS} signs in a row in the {what}")
        else:
            signs = 0
        if kind == tt.NUMBER and len(tok.text) > MAX_NUMBER_CHARS:
            raise PredicateError(f"numeric literal of {len(tok.text)} characters is longer than {MAX_NUMBER_CHARS}")
        deepest = max(deepest, len(open_nots) - 1 + sum(open_nots))
        previous = kind
    if deepest > MAX_NESTING:
        raise PredicateError(f"{what} nests {deepest} levels deep (parentheses and NOT); "
                             f"at most {MAX_NESTING} are supported")
    return toks

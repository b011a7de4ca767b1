"""Predicates in Paimon's vocabulary: leaf functions as types, the predicate tree and its
visitors, SQL ``WHERE`` text parsed with sqlglot.

* :mod:`.functions` - one class per leaf function (Paimon's ``LeafFunction``): arity, negation,
  null semantics, value and statistics tests, visitor dispatch.
* :mod:`.tree` - :class:`Leaf`, :class:`Compound` (AND / OR) and the tree visitors
  (conjuncts, disjuncts, leaves, rename, negate).
* :mod:`.sql` - SQL ``WHERE`` text -> predicates, and the golden vectors' JSON trees; its literals
  read in :mod:`.sql_literals`, the text bounded in :mod:`.sql_text`.
* :mod:`.rows` - the one row-level evaluator (vectorized over Arrow columns, through
  :mod:`indexcore.types.values`); import it from there.
"""

from indexcore.expr.functions import (
    BETWEEN,
    CONTAINS,
    ENDS_WITH,
    EQUAL,
    GREATER_OR_EQUAL,
    GREATER_THAN,
    IN,
    IS_NOT_NULL,
    IS_NULL,
    LEAF_FUNCTIONS,
    LESS_OR_EQUAL,
    LESS_THAN,
    NOT_BETWEEN,
    NOT_EQUAL,
    NOT_IN,
    STARTS_WITH,
    Between,
    Comparison,
    Contains,
    EndsWith,
    Equal,
    FunctionVisitor,
    GreaterOrEqual,
    GreaterThan,
    In,
    IsNotNull,
    IsNull,
    LeafFunction,
    LessOrEqual,
    LessThan,
    NotBetween,
    NotEqual,
    NotIn,
    StartsWith,
    StringPattern,
    java_compare,
    leaf_function,
)
from indexcore.expr.literal import literal_to_sql, quote_name, quote_table
from indexcore.expr.sql import parse_where, predicate_from_json
from indexcore.expr.tree import (
    AND,
    OR,
    And,
    Compound,
    CompoundFunction,
    Leaf,
    Or,
    Predicate,
    and_all,
    conjuncts,
    disjuncts,
    leaves,
    negate,
    predicate_to_sql,
    rename,
)

__all__ = [
    "AND", "BETWEEN", "CONTAINS", "ENDS_WITH", "EQUAL", "GREATER_OR_EQUAL", "GREATER_THAN", "IN", "IS_NOT_NULL", "IS_NULL",
    "LEAF_FUNCTIONS", "LESS_OR_EQUAL", "LESS_THAN", "NOT_BETWEEN", "NOT_EQUAL", "NOT_IN", "OR", "STARTS_WITH",
    "And", "Between", "Comparison", "Compound", "CompoundFunction", "Contains", "EndsWith", "Equal", "FunctionVisitor", "GreaterOrEqual",
    "GreaterThan", "In", "IsNotNull", "IsNull", "Leaf", "LeafFunction", "LessOrEqual", "LessThan",
    "NotBetween", "NotEqual", "NotIn", "Or", "Predicate", "StartsWith", "StringPattern", "and_all", "conjuncts", "disjuncts",
    "java_compare", "leaf_function", "leaves", "literal_to_sql", "negate", "parse_where",
    "predicate_from_json", "predicate_to_sql", "quote_name", "quote_table", "rename",
]

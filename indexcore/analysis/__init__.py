"""What we conclude from a table: audit, advise, what-if, health, diff, check, workloads, file
and delete balance, global index coverage.

Importing this package registers the derived views (``$global_indexes``,
``$global_index_coverage``, ``$health``) into :mod:`indexcore.views`, in that order.
"""

from indexcore.analysis import coverage, health  # noqa: F401  (register their views)

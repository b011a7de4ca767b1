"""What we conclude from a table: audit, advise, what-if, health, diff, check, workloads, file
and delete balance, global index coverage, vector and full-text index search.

Importing this package registers the derived views (``$global_indexes``,
``$global_index_coverage``, ``$full_text_indexes``, ``$health``, ``$vector_indexes``) into
:mod:`indexcore.views`, in that order.
"""

from indexcore.analysis import coverage, full_text, health, vector_search  # noqa: F401  (register their views)

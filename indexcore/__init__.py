"""indexcore: read, evaluate and write Apache Paimon index files and warehouses.

``indexcore.open_warehouse(url)`` is the entry point for notebooks; the CLI is
``python -m indexcore``.
"""

from indexcore.errors import (
    CorruptFileError,
    IndexCoreError,
    PredicateError,
    ReadOnlyError,
    StorageError,
    UnsupportedError,
)

__all__ = ["open_warehouse", "IndexCoreError", "CorruptFileError", "PredicateError", "ReadOnlyError",
           "StorageError", "UnsupportedError"]
__version__ = "0.1.0"


def open_warehouse(url, **kwargs):
    """Open a Paimon warehouse read-only (see :class:`indexcore.warehouse.Warehouse`).

    ``allowed_roots`` limits which paths may be read; ``storage_options`` go to fsspec.
    """
    # lazy: ``import indexcore.formats`` (Spark workers, the codecs) stays light; importing
    # analysis registers the derived views ($health, $global_indexes, ...) for views.view()
    import indexcore.analysis  # noqa: F401  (lazy: see above)
    from indexcore.warehouse import Warehouse  # lazy: see above

    return Warehouse(url, **kwargs)

"""indexcore: read, evaluate and write Apache Paimon index files and warehouses."""

from .errors import CorruptFileError, IndexCoreError, PredicateError, StorageError, UnsupportedError

__all__ = ["IndexCoreError", "CorruptFileError", "PredicateError", "StorageError", "UnsupportedError"]
__version__ = "0.1.0"


def open_warehouse(url, **kwargs):
    """Open a Paimon warehouse read-only (see :class:`indexcore.warehouse.Warehouse`)."""
    from .warehouse import Warehouse

    return Warehouse(url, **kwargs)

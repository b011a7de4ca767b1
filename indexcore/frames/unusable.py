"""The files a page could not use, and why: file indexes of the census, index-manifest files (HASH,
global indexes), live files whose deletion-vector file is gone, and the unreadable metadata that
hides files from every page. Rows of :data:`UNUSABLE_COLUMNS` (:mod:`indexcore.analysis.health`
decides what is unusable)."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from indexcore.analysis.health import (
    GLOBAL_INDEX,
    MISSING_DV,
    UNUSABLE_COLUMNS,
    lost_deletion_vectors,
    unusable_files,
    unusable_index_files,
)
from indexcore.paimon.index_types import HASH


def unreadable_parts(problems: pd.DataFrame) -> pd.DataFrame:
    """An :func:`~indexcore.frames.table.unreadable_frame` as unusable-file rows: the manifests,
    index manifests and other metadata that could not be read, each named by its file."""
    return pd.DataFrame({"file_name": problems["path"].map(lambda p: str(p).rsplit("/", 1)[-1]),
                         "index_type": None, "column_name": None, "dv_file": None,
                         "why": "unreadable " + problems["structure"].astype(str), "error": problems["reason"]})


def with_unreadable(unusable: pd.DataFrame, problems: pd.DataFrame) -> pd.DataFrame:
    """Unusable-file rows followed by the :func:`unreadable_parts` of ``problems``."""
    return pd.concat([unusable, unreadable_parts(problems)[UNUSABLE_COLUMNS]], ignore_index=True)


def unusable_file_indexes(census: pd.DataFrame, index_types: Iterable[str], problems: pd.DataFrame) -> pd.DataFrame:
    """Files of a ``$file_indexes`` frame whose file index of ``index_types`` could not be used,
    plus the :func:`unreadable_parts` of ``problems``."""
    return with_unreadable(unusable_files(census, index_types), problems)


def missing_dv_files(table, deletion_vectors: pd.DataFrame) -> pd.DataFrame:
    """Live files of a ``$deletion_vectors`` frame whose deletion-vector file is gone (their deletes are lost)."""
    lost = lost_deletion_vectors(table, deletion_vectors)
    if lost.empty:
        return pd.DataFrame(columns=["file_name", "dv_file", "why"])
    return lost.assign(why=MISSING_DV)[["file_name", "dv_file", "why"]]


__all__ = ["GLOBAL_INDEX", "HASH", "UNUSABLE_COLUMNS", "missing_dv_files", "unreadable_parts",
           "unusable_file_indexes", "unusable_index_files", "with_unreadable"]

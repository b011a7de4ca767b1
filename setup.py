"""The optional C extensions (the Avro column decoder of manifests; roaring bitmaps and BSI parts
decoded to row arrays; file-index container heads read and parsed a batch at a time); everything
else is in pyproject.toml. ``optional=True``: without a C compiler the package still installs,
manifests decode through polars or fastavro (indexcore.warehouse.avro_columns.AVAILABLE is False),
BSI blobs through pyroaring (indexcore.formats.bsi.NATIVE is False) and container heads through
Python (indexcore.formats.head_batch.NATIVE is False). The three share one header,
``indexcore/_native/buffers.h``: on the include path of each, and in each one's ``depends`` (so an
sdist carries it and a change to it rebuilds them)."""

from setuptools import Extension, setup

NATIVE = "indexcore/_native"


def _extension(name: str, source: str) -> Extension:
    """One optional extension built from one C file with the shared header."""
    return Extension(name, [source], include_dirs=[NATIVE], depends=[f"{NATIVE}/buffers.h"], optional=True)


setup(ext_modules=[_extension("indexcore.warehouse._avro_columns", "indexcore/warehouse/_avro_columns.c"),
                   _extension("indexcore.formats._roaring_rows", "indexcore/formats/_roaring_rows.c"),
                   _extension("indexcore.formats._container_heads", "indexcore/formats/_container_heads.c")])

"""The optional C extensions (the Avro column decoder of manifests; roaring bitmaps and BSI parts
decoded to row arrays; file-index container heads read and parsed a batch at a time); everything
else is in pyproject.toml. ``optional=True``: without a C compiler the package still installs,
manifests decode through polars or fastavro (indexcore.warehouse.avro_columns.AVAILABLE is False),
BSI blobs through pyroaring (indexcore.formats.bsi.NATIVE is False) and container heads through
Python (indexcore.formats.head_batch.NATIVE is False)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("indexcore.warehouse._avro_columns", ["indexcore/warehouse/_avro_columns.c"],
                             optional=True),
                   Extension("indexcore.formats._roaring_rows", ["indexcore/formats/_roaring_rows.c"], optional=True),
                   Extension("indexcore.formats._container_heads", ["indexcore/formats/_container_heads.c"],
                             optional=True)])

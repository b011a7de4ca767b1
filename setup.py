"""The optional C extension (the Avro column decoder of manifests); everything else is in
pyproject.toml. ``optional=True``: without a C compiler the package still installs and manifests
decode through polars or fastavro (indexcore.warehouse.avro_columns.AVAILABLE is False)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("indexcore.warehouse._avro_columns", ["indexcore/warehouse/_avro_columns.c"],
                             optional=True)])

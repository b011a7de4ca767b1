"""Write real Paimon tables: schema, Parquet data files with file indexes, DVs, hash indexes,
manifests and snapshots that Paimon Java and pypaimon read.

``TableWriter.create(warehouse_path, "db.t", make_schema(...), seed)`` then ``writer.write(rows)``
(in-process) or :mod:`indexcore.spark.pipeline` (data files written inside Spark tasks).
"""

from indexcore.write.datafile import (
           WrittenFile,
           arrow_type,
           build_file_index,
           build_file_index_container,
           write_data_file,
)
from indexcore.write.layout import Namer, make_schema, schema_json
from indexcore.write.table import READ_ONLY_MARKER, TableWriter, check_writable
from indexcore.write.task import TaskSpec, write_task_rows

__all__ = ["TableWriter", "TaskSpec", "WrittenFile", "make_schema", "schema_json", "build_file_index",
           "build_file_index_container", "write_data_file", "write_task_rows",
           "Namer", "arrow_type", "check_writable", "READ_ONLY_MARKER"]

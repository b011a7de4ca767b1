"""A Spark session for indexcore: local[*] by default, or a cluster / Spark Connect URL.

Workers must run this same Python (they import indexcore), so ``PYSPARK_PYTHON`` and
``PYSPARK_DRIVER_PYTHON`` are pointed at ``sys.executable``. Shuffle partitions are few, the
UI is off and logs are quiet: the pipeline moves little data through shuffles.
"""

from __future__ import annotations

import os
import sys

DEFAULT_MASTER = "local[*]"


def get_session(master: str | None = None, app_name: str = "indexcore", shuffle_partitions: int = 8,
                conf: dict[str, str] | None = None):
    """Build (or reuse) a SparkSession.

    ``master``: ``local[*]`` (default), ``local[N]``, ``spark://host:port``, ``yarn``; a
    ``sc://host:port`` URL connects through Spark Connect instead.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    master = master or os.environ.get("INDEXCORE_SPARK_MASTER") or DEFAULT_MASTER
    if master.startswith("sc://"):
        builder = _connect_builder().remote(master).appName(app_name)
    else:
        builder = (SparkSession.builder.appName(app_name).master(master)
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.execution.arrow.pyspark.enabled", "true")
                   .config("spark.driver.extraJavaOptions", "-Dlog4j.rootLogger=ERROR,console")
                   .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable))
    builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not master.startswith("sc://"):
        spark.sparkContext.setLogLevel("ERROR")
    return spark


def _connect_builder():
    """Spark Connect's own session builder.

    PySpark's generic builder refuses a remote session while a classic SparkContext lives in
    this process, and marks the whole process as Connect-only (``SPARK_CONNECT_MODE_ENABLED``),
    so no classic session could be made afterwards. Connect's builder does neither: one process
    (the app, a test run) can hold a classic and a Connect session side by side.
    """
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    return ConnectSession.builder

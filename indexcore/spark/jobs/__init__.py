"""Full-table work on Spark: evaluate a predicate, audit indexes, try a hypothetical index.

The driver plans the snapshot once and ships each task its files as picklable
:class:`~indexcore.warehouse.model.LiveFile` records (:mod:`.task_files`: path, row count,
schema id, stats decoded, index location or embedded bytes, deletion-vector range, partition
and bucket). A task opens the warehouse (:mod:`.tables`: cached per Python worker; reopened
when the table has a schema the cache lacks) only to read files: it never plans. The files of
one primary-key bucket go to the same task of :func:`.evaluate.evaluate` (stats pruning is
decided per bucket); everything else is spread freely over ``TASKS_PER_CORE`` tasks per core
(:mod:`.run`). Over Spark Connect results come back as JSON (:mod:`.plain`), never as pickles.

* :mod:`.evaluate` runs explain's per-file decision (:func:`indexcore.scan.explain.decide_files`,
  verified) on each task's files; the driver assembles them with explain's own
  :func:`~indexcore.scan.explain.explanation`, so files and funnel equal the single-process explain.
* :mod:`.audit` runs :func:`indexcore.analysis.audit.audit_file` per file in tasks and
  :func:`~indexcore.analysis.audit.audit_table` on the driver.
* :mod:`.what_if` builds the hypothetical index per data file with
  :func:`indexcore.analysis.whatif.build_hypothetical_index`, keeps its bytes in a scratch
  directory (never the warehouse) and compares pruning with
  :func:`~indexcore.analysis.whatif.evaluate_hypothetical`, as the app and the CLI do.

* :mod:`.metadata` runs the metadata work of a snapshot without planning it on the driver: tasks
  read the manifests, merge them per (partition, bucket) with the planner's merge and run
  ``$files``, the ``$file_indexes`` census or explain's per-file decision on the live files found;
  health and advise read that census.

A Spark worker needs nothing but ``pip install`` of this project.
"""

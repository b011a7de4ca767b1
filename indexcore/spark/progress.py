"""Progress and cancellation of the Spark jobs indexcore runs.

:class:`JobWatch` wraps one action: it tags it with a job group (classic Spark) or a tag
(Spark Connect), polls Spark's status tracker in a background thread and reports
``progress(done, total, message)`` in tasks, and cancels the job when the ``cancel`` event
(a :class:`threading.Event`) is set. A Spark Connect session has no SparkContext, hence no
status tracker: progress is then coarse (started / finished).
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable

Progress = Callable[[int, int, str], None]
POLL_SECONDS = 0.2


def spark_context(spark):
    """The SparkContext of a classic session; None for Spark Connect."""
    try:
        return spark.sparkContext
    except Exception:  # noqa: BLE001 - Connect raises its own not-supported errors
        return None


class JobWatch:
    """Context manager around one Spark action: progress polling and cancellation."""

    def __init__(self, spark, description: str, progress: Progress | None = None,
                 cancel: threading.Event | None = None, expected_tasks: int = 0):
        self.spark = spark
        self.sc = spark_context(spark)
        self.description = description
        self.progress = progress
        self.cancel = cancel
        self.expected = expected_tasks
        self.group = f"indexcore-{uuid.uuid4().hex[:12]}"
        self.cancelled = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last: tuple[int, int] | None = None

    # -- lifecycle
    def __enter__(self) -> JobWatch:
        if self.sc is not None:
            self.sc.setJobGroup(self.group, self.description, interruptOnCancel=True)
        else:
            self.spark.addTag(self.group)
        self._report(0, self.expected, "starting")
        if self.progress is not None or self.cancel is not None:
            self._thread = threading.Thread(target=self._poll, name=self.group, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.sc is not None:
            self.sc.setLocalProperty("spark.jobGroup.id", None)
            self.sc.setLocalProperty("spark.job.description", None)
        else:
            with contextlib.suppress(Exception):  # best effort on a closing session
                self.spark.removeTag(self.group)
        if exc_type is None:
            done = self._last[1] if self._last else self.expected
            self._report(done, done, "done")

    # -- polling
    def counts(self) -> tuple[int, int]:
        """(tasks done, tasks total) over every stage of the group's jobs."""
        if self.sc is None:
            return 0, self.expected
        tracker = self.sc.statusTracker()
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(self.group):
            job = tracker.getJobInfo(job_id)
            if job is None:
                continue
            for stage_id in job.stageIds:
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
        return done, total or self.expected

    def _poll(self) -> None:
        interrupted = False
        while not self._stop.wait(POLL_SECONDS):
            if self.cancel is not None and self.cancel.is_set() and not interrupted:
                self.cancelled = True
                interrupted = self._cancel()
            if self.sc is not None and self.progress is not None:  # py4j calls only for a listener
                done, total = self.counts()
                self._report(done, total, "tasks")

    def _cancel(self) -> bool:
        """Cancel the group's jobs; False when nothing could be interrupted yet, to try again.

        Spark Connect interrupts only operations the server already runs: one cancelled while
        the client is still sending its plan is interrupted on a later poll.
        """
        if self.sc is not None:
            self.sc.cancelJobGroup(self.group)
            return True
        return bool(self.spark.interruptTag(self.group))

    def _report(self, done: int, total: int, message: str) -> None:
        if self.progress is None or (done, total) == self._last:
            return
        self._last = (done, total)
        self.progress(done, total, message)

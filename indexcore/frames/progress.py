"""The progress callback every long frame takes: ``progress(done, total, what)``."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int, str], None]


def tick(progress: Progress | None, done: int, total: int, what: str) -> None:
    """Report ``done`` of ``total`` (``what``: the item at hand) when a callback was given."""
    if progress is not None:
        progress(done, total, what)

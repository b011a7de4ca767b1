"""Spark side of indexcore: a session factory and the pipeline that writes Paimon tables."""

from indexcore.spark.session import get_session

__all__ = ["get_session"]

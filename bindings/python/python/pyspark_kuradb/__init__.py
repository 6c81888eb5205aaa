"""The kuradb format for PySpark's automatic discovery of Python data
sources: PySpark imports every top-level module whose name starts with
``pyspark_`` and registers its ``DefaultSource`` under its name, so
``spark.read.format("kuradb")`` works without a ``register`` call. The
implementation is ``kuradb.spark``."""

from kuradb.spark import KuraDataSource as DefaultSource

__all__ = ["DefaultSource"]

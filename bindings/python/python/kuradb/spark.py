"""Apache Spark support: the ``kuradb`` format of PySpark's Python data
source API (PySpark 4.1 or later, with pyarrow).

Writing publishes a new version of a published directory (see
``kuradb.PublishJob``)::

    df.write.format("kuradb").mode("overwrite") \\
        .option("dbm", "tree").option("num_shards", 8).save("/data/fruits")
    kuradb.spark.write_sharded(df, "/data/fruits", num_shards=8, dbm="tree")

The package also installs the module ``pyspark_kuradb``, whose
``DefaultSource`` PySpark finds by itself; ``register(spark)`` registers the
format explicitly. The guide is docs/scaling.md.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

try:
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
    from pyspark.sql.types import BinaryType, StringType, StructType
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "kuradb.spark needs pyspark 4.1 or later and pyarrow: pip install 'pyspark>=4.1' pyarrow"
    ) from error

import kuradb

__all__ = ["KuraDataSource", "register", "write_sharded", "FORMAT"]

#: The name the data source registers: ``spark.read.format("kuradb")``.
FORMAT = "kuradb"

# Options the data source itself reads; every other option is a parameter of
# the shards' class, as PolyDbm takes it.
_OWN_OPTIONS = {"path", "num_shards", "key_column", "value_column", "keep"}

# Classes whose records are kept in key order: their writers get rows
# sorted by key.
_ORDERED_CLASSES = {"tree", "skip", "baby", "stdtree"}


def _current_manifest(dir: str) -> Optional[Dict[str, Any]]:
    """The manifest of the current version of the published directory
    ``dir`` (docs/format.md, "Published directory"), or None if it has no
    version yet."""
    try:
        with open(os.path.join(dir, "CURRENT"), encoding="utf-8") as f:
            name = f.read().strip()
    except FileNotFoundError:
        return None
    with open(os.path.join(dir, name, "MANIFEST.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    manifest["_dir"] = os.path.join(dir, name)
    return manifest


def _path_of(options: Dict[str, str]) -> str:
    path = options.get("path")
    if not path:
        raise ValueError("the kuradb format needs a directory: .save(DIR) or .load(DIR)")
    return str(path)


def _column_types(
    schema: StructType, key_column: str, value_column: str, doing: str
) -> Tuple[str, str, bool, bool]:
    """The key and value columns' names as the schema spells them and
    whether each is a string (else binary); any other schema is an error
    naming the one expected."""
    expected = (
        f"kuradb {doing} a DataFrame of exactly two columns, {key_column!r} and {value_column!r}, "
        "each string or binary (options key_column and value_column name them)"
    )
    by_name = {f.name.lower(): f for f in schema.fields}
    key, value = by_name.get(key_column.lower()), by_name.get(value_column.lower())
    if len(schema.fields) != 2 or key is None or value is None or key is value:
        raise ValueError(f"{expected}; this one has {schema.simpleString()}")
    for f in (key, value):
        if not isinstance(f.dataType, (StringType, BinaryType)):
            raise ValueError(f"{expected}; column {f.name!r} is {f.dataType.simpleString()}")
    return key.name, value.name, isinstance(key.dataType, StringType), isinstance(value.dataType, StringType)


def _shard_params(manifest: Dict[str, Any]) -> Dict[str, str]:
    return {"dbm": manifest["class"], **manifest.get("params", {})}


class KuraDataSource(DataSource):
    """The ``kuradb`` format: a published directory of kuradb shards."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        key = self.options.get("key_column", "key")
        value = self.options.get("value_column", "value")
        return f"`{key}` binary, `{value}` binary"

    def writer(self, schema: StructType, overwrite: bool) -> "KuraWriter":
        return KuraWriter(dict(self.options), schema, overwrite)


def register(spark: Any) -> None:
    """Registers the ``kuradb`` format with the session ``spark`` (PySpark
    also finds it by itself, through the ``pyspark_kuradb`` module)."""
    spark.dataSource.register(KuraDataSource)


# ---------------------------------------------------------------- writing


@dataclass
class KuraCommitMessage(WriterCommitMessage):
    """What one task attempt staged: its attempt id, its partition, and the
    shards it wrote a file for."""

    attempt: str
    partition: int
    shards: List[int] = field(default_factory=list)


def _attempt_id() -> Tuple[str, int]:
    """An attempt id unique in the job (the stage, the partition and the
    attempt number of the running task) and the partition."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return f"local-{uuid.uuid4().hex}", 0
    return f"t{ctx.stageId()}-{ctx.partitionId()}-{ctx.attemptNumber()}", ctx.partitionId()


class KuraWriter(DataSourceArrowWriter):
    """Stages one file per shard a task has rows for; the driver's commit
    publishes them as one new version (merging a shard that several tasks
    wrote), and an abort removes them."""

    def __init__(self, options: Dict[str, str], schema: StructType, overwrite: bool) -> None:
        self.dir = _path_of(options)
        self.key_column, self.value_column, _, _ = _column_types(
            schema, options.get("key_column", "key"), options.get("value_column", "value"), "writes"
        )
        self.keep = int(options.get("keep", 2))
        if self.keep < 1:
            raise ValueError(f"option keep must be at least 1 (the current version stays), not {self.keep}")
        params = {k: str(v) for k, v in options.items() if k not in _OWN_OPTIONS}
        manifest = None if overwrite else _current_manifest(self.dir)
        self.append = manifest is not None
        if manifest is not None:
            # An append keeps the current version's class, parameters and
            # number of shards: options that say otherwise are mistakes.
            current = _shard_params(manifest)
            if "num_shards" in options and int(options["num_shards"]) != manifest["num_shards"]:
                raise ValueError(
                    f"option num_shards is {options['num_shards']}, but {self.dir} has "
                    f"{manifest['num_shards']} shards: an append keeps them (overwrite to change)"
                )
            for name, value in params.items():
                if current.get(name) != value:
                    raise ValueError(
                        f"option {name}={value} differs from {self.dir}'s current version "
                        f"({name}={current.get(name)}): an append keeps its parameters (overwrite to change)"
                    )
            self.params = current
            self.num_shards = int(manifest["num_shards"])
        else:
            params.setdefault("dbm", "hash")
            self.params = params
            self.num_shards = int(options.get("num_shards", 1))
        self.job_id = f"spark-{uuid.uuid4().hex}"
        # Checks the class and its parameters on the driver, before any task.
        self._job()

    def _job(self) -> "kuradb.PublishJob":
        return kuradb.PublishJob(self.dir, self.job_id, self.num_shards, **self.params)

    def write(self, iterator: Iterator["pa.RecordBatch"]) -> KuraCommitMessage:
        attempt, partition = _attempt_id()
        job = self._job()
        staged: Dict[int, Any] = {}
        try:
            for batch in iterator:
                if batch.num_rows == 0:
                    continue
                keys = batch.column(self.key_column)
                values = batch.column(self.value_column)
                for column, what in ((keys, self.key_column), (values, self.value_column)):
                    if column.null_count:
                        raise ValueError(f"column {what!r} has a null: kuradb records have no null keys or values")
                for shard, k, v in _by_shard(keys, values, self.num_shards):
                    db = staged.get(shard)
                    if db is None:
                        db = staged[shard] = job.stage(shard, attempt)
                    db.set_arrow(k, v)
        finally:
            # A failed attempt's files stay in the job's staging until the
            # commit or the abort removes the whole staging.
            for db in staged.values():
                db.close()
        return KuraCommitMessage(attempt, partition, sorted(staged))

    def commit(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        job = self._job()
        try:
            by_shard: Dict[int, List[Tuple[int, str]]] = defaultdict(list)
            for message in messages:
                if isinstance(message, KuraCommitMessage):
                    for shard in message.shards:
                        by_shard[shard].append((message.partition, message.attempt))
            if self.append:
                self._commit_append(job, by_shard)
            else:
                chosen = {}
                for shard, attempts in by_shard.items():
                    if len(attempts) == 1:
                        chosen[shard] = attempts[0][1]
                    else:
                        chosen[shard] = self._merge(job, job, shard, attempts)
                job.commit(chosen, create_missing=True, keep=self.keep)
        except BaseException:
            job.abort()
            raise

    def _commit_append(self, job: "kuradb.PublishJob", by_shard: Dict[int, List[Tuple[int, str]]]) -> None:
        # Tasks staged only their new rows; each shard they wrote is the
        # current version's shard plus those rows, the others carry over.
        appending = kuradb.PublishJob.appending(self.dir, self.job_id)
        chosen = {shard: self._merge(job, appending, shard, attempts) for shard, attempts in by_shard.items()}
        appending.commit(chosen, create_missing=True, keep=self.keep)

    def _merge(
        self, rows: "kuradb.PublishJob", into: "kuradb.PublishJob", shard: int, attempts: List[Tuple[int, str]]
    ) -> str:
        """Stages shard ``shard`` as attempt "merged" of ``into``: its start
        (empty, or the current version's shard for an appending job) plus the
        files ``attempts`` staged in ``rows``, in partition order, so a key
        several tasks wrote keeps the value of the last partition."""
        merged = "merged"
        with into.stage(shard, merged) as dest:
            for _, attempt in sorted(attempts):
                with kuradb.DBM(rows.staged_path(shard, attempt), False, **self.params) as src:
                    src.export(dest)
        return merged

    def abort(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        self._job().abort()


def _by_shard(keys: "pa.Array", values: "pa.Array", num_shards: int) -> Iterator[Tuple[int, "pa.Array", "pa.Array"]]:
    """The rows of a batch grouped by the shard their key belongs in, each
    group in the batch's order."""
    if num_shards == 1:
        yield 0, keys, values
        return
    ids = kuradb.shard_of_arrow(keys, num_shards)
    order = pc.sort_indices(ids)  # stable: a later row of a key stays later
    ids, keys, values = ids.take(order), keys.take(order), values.take(order)
    at = 0
    for entry in pc.value_counts(ids):
        shard, count = entry["values"].as_py(), entry["counts"].as_py()
        yield shard, keys.slice(at, count), values.slice(at, count)
        at += count


def _spark_partition_codes(spark: Any, num_partitions: int) -> List[int]:
    """For each partition i, an int whose Spark hash (Murmur3, the hash
    ``repartition(n, col)`` places rows with) lands in partition i."""
    from pyspark.sql import functions as F

    codes: Dict[int, int] = {}
    span = num_partitions * 32
    while len(codes) < num_partitions:
        rows = (
            spark.range(0, span)
            .select(F.col("id").cast("int").alias("v"))
            .select("v", F.expr(f"pmod(hash(v), {num_partitions})").alias("p"))
            .groupBy("p")
            .agg(F.min("v").alias("v"))
            .collect()
        )
        codes = {row["p"]: row["v"] for row in rows}
        span *= 4
    return [codes[i] for i in range(num_partitions)]


def shard_partitioned(
    df: Any, num_shards: int, key_column: str = "key", value_column: str = "value", sort: bool = False
) -> Any:
    """``df`` in exactly ``num_shards`` partitions, partition i holding the
    rows whose key belongs in shard i (``kuradb.shard_of``), sorted by key
    within each partition if ``sort``."""
    from pyspark.sql import functions as F
    from pyspark.sql.functions import arrow_udf

    _column_types(df.schema, key_column, value_column, "writes")

    @arrow_udf("int")  # type: ignore[misc]
    def shard_id(keys: pa.Array) -> pa.Array:
        return kuradb.shard_of_arrow(keys, num_shards)

    codes = _spark_partition_codes(df.sparkSession, num_shards)
    part = "_kuradb_partition"
    placed = df.withColumn(
        part, F.element_at(F.array(*[F.lit(c) for c in codes]), shard_id(F.col(key_column)) + F.lit(1))
    )
    placed = placed.repartition(num_shards, part).drop(part)
    return placed.sortWithinPartitions(key_column) if sort else placed


def write_sharded(
    df: Any,
    dir: str,
    num_shards: Optional[int] = None,
    mode: str = "overwrite",
    key_column: str = "key",
    value_column: str = "value",
    keep: int = 2,
    **params: Any,
) -> None:
    """Writes ``df`` (a key and a value column, string or binary) as a new
    version of the published directory ``dir``: one task per shard, each
    writing the keys that belong in its shard (sorted first for an ordered
    class), so no shard is merged. ``params`` are the shards' class and
    parameters as PolyDbm takes them (``dbm="tree"``, …); ``mode`` is
    "overwrite" or "append" (which keeps the current version's shards and
    parameters, so ``num_shards`` may be left out)."""
    if mode not in ("overwrite", "append"):
        raise ValueError(f"mode must be 'overwrite' or 'append', not {mode!r}")
    manifest = _current_manifest(dir) if mode == "append" else None
    if manifest is not None:
        num_shards = num_shards or int(manifest["num_shards"])
        dbm = manifest["class"]
    else:
        if num_shards is None:
            raise ValueError("write_sharded needs num_shards (the directory has no version to append to)")
        dbm = str(params.get("dbm", "hash"))
    sort = dbm in _ORDERED_CLASSES
    writer = (
        shard_partitioned(df, num_shards, key_column, value_column, sort=sort)
        .write.format(FORMAT)
        .mode(mode)
        .option("key_column", key_column)
        .option("value_column", value_column)
        .option("keep", keep)
    )
    if manifest is None:
        writer = writer.option("num_shards", num_shards)
    for name, value in params.items():
        writer = writer.option(name, str(value))
    _ensure_registered(df.sparkSession)
    writer.save(dir)


def _ensure_registered(spark: Any) -> None:
    # Automatic discovery needs the package importable where PySpark's
    # planner runs; the explicit registration does not.
    spark.dataSource.register(KuraDataSource)

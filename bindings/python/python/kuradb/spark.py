"""Apache Spark support: the ``kuradb`` format of PySpark's Python data
source API (PySpark 4.1 or later, with pyarrow).

Writing publishes a new version of a published directory (see
``kuradb.PublishJob``)::

    df.write.format("kuradb").mode("overwrite") \\
        .option("dbm", "tree").option("num_shards", 8).save("/data/fruits")
    kuradb.spark.write_sharded(df, "/data/fruits", num_shards=8, dbm="tree")

Reading opens the current version, one partition per shard::

    spark.read.format("kuradb").load("/data/fruits").filter("key = 'apple'")

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
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

try:
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceReader,
        EqualTo,
        Filter,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        InputPartition,
        LessThan,
        LessThanOrEqual,
        StringStartsWith,
        WriterCommitMessage,
    )
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
_OWN_OPTIONS = {"path", "num_shards", "key_column", "value_column", "keep", "batch_size", "pushdown"}

# The session setting without which PySpark refuses a reader that pushes
# filters (register() turns it on).
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"

# Classes whose records a cursor reads in byte order (with the default
# comparator), so that a range or a prefix is one stretch of a shard.
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

    def reader(self, schema: StructType) -> "KuraReader":
        # PySpark refuses a reader with pushFilters while the session's
        # PUSHDOWN_CONF is off; option pushdown=false reads without it.
        pushdown = str(self.options.get("pushdown", "true")).lower()
        if pushdown not in ("true", "false"):
            raise ValueError(f"option pushdown must be true or false, not {pushdown!r}")
        cls = KuraPushdownReader if pushdown == "true" else KuraReader
        return cls(dict(self.options), schema)


def register(spark: Any) -> None:
    """Registers the ``kuradb`` format with the session ``spark`` (PySpark
    also finds it by itself, through the ``pyspark_kuradb`` module) and
    turns on the session's filter pushdown for Python data sources
    (``spark.sql.python.filterPushdown.enabled``), which its reader needs
    unless read with ``option("pushdown", "false")``."""
    spark.dataSource.register(KuraDataSource)
    spark.conf.set(PUSHDOWN_CONF, "true")


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
    version of the published directory ``dir``, without a shuffle: each
    task of ``df`` routes its rows to one Arrow file per shard, then one
    task writes each shard from those files (each batch sorted by
    key first for an ordered class), so every record is written into a
    database once and no shard is merged. ``params`` are the shards' class
    and parameters as PolyDbm takes them (``dbm="tree"``, …). ``mode`` is
    one of Spark's save modes: "overwrite"; "append" (which keeps the
    current version's shards and parameters, so ``num_shards`` may be left
    out); "errorifexists" (or "error"), which fails if ``dir`` already has
    a version; "ignore", which does nothing if it has one."""
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {', '.join(repr(m) for m in _MODES)}, not {mode!r}")
    if mode in ("errorifexists", "error", "ignore"):
        if _current_manifest(dir) is not None:
            if mode == "ignore":
                return
            _refuse_existing(dir, mode)
        mode = "overwrite"
        exclusive = True
    else:
        exclusive = False
    options = {"path": dir, "key_column": key_column, "value_column": value_column, "keep": str(keep)}
    options.update({name: str(value) for name, value in params.items()})
    if num_shards is not None:
        options["num_shards"] = str(num_shards)
    elif mode == "overwrite" or _current_manifest(dir) is None:
        raise ValueError("write_sharded needs num_shards (the directory has no version to append to)")
    # The writer checks the schema, the class, its parameters and what an
    # append keeps, on the driver, before any task runs.
    plan = KuraWriter(options, df.schema, overwrite=mode == "overwrite")
    job = kuradb.PublishJob.appending(dir, plan.job_id) if plan.append else plan._job()
    try:
        runs = _write_runs(df, plan, job)
        chosen = _build_shards(df.sparkSession, plan, runs)
        if exclusive and _current_manifest(dir) is not None:
            # Another job published while this one wrote.
            _refuse_existing(dir, "errorifexists")
        job.commit(chosen, create_missing=True, keep=plan.keep)
    except BaseException:
        job.abort()
        raise


#: The save modes ``write_sharded`` takes (Spark's names).
_MODES = ("overwrite", "append", "errorifexists", "error", "ignore")


def _refuse_existing(dir: str, mode: str) -> None:
    manifest = _current_manifest(dir)
    version = f"v-{manifest['version']}" if manifest is not None else "a version"
    raise FileExistsError(
        f"{dir} already has a version ({version}): mode {mode!r} writes only to a directory without one "
        "(use 'overwrite' to replace it, 'append' to add to it, 'ignore' to leave it)"
    )


def _runs_dir(job: "kuradb.PublishJob") -> str:
    # Inside the job's staging (which the commit and the abort remove), under
    # a name no attempt's directory has.
    return os.path.join(os.path.dirname(os.path.dirname(job.staged_path(0, "runs"))), "_runs")


def _write_runs(df: Any, plan: "KuraWriter", job: "kuradb.PublishJob") -> Dict[int, List[str]]:
    """Each task of ``df`` writes its rows into one Arrow IPC file per shard
    they belong in; answers the files of every shard in partition order.
    Only successful attempts' files are answered (Spark keeps one result
    per partition), so a failed or speculative attempt's files are ignored
    and removed with the staging."""
    runs = _runs_dir(job)
    spill = _RunWriter(runs, plan.key_column, plan.value_column, plan.num_shards)
    listed = df.select(plan.key_column, plan.value_column).mapInArrow(
        spill, "partition int, shard int, file string"
    ).collect()
    by_shard: Dict[int, List[Tuple[int, str]]] = defaultdict(list)
    for row in listed:
        by_shard[row["shard"]].append((row["partition"], row["file"]))
    return {shard: [f for _, f in sorted(files)] for shard, files in by_shard.items()}


class _RunWriter:
    """The task of the first job of ``write_sharded`` (a picklable callable
    for ``mapInArrow``)."""

    def __init__(self, runs: str, key_column: str, value_column: str, num_shards: int) -> None:
        self.runs, self.key_column, self.value_column = runs, key_column, value_column
        self.num_shards = num_shards

    def __call__(self, batches: Iterator["pa.RecordBatch"]) -> Iterator["pa.RecordBatch"]:
        attempt, partition = _attempt_id()
        os.makedirs(self.runs, exist_ok=True)
        schema = pa.schema([("key", pa.binary()), ("value", pa.binary())])
        writers: Dict[int, Any] = {}
        files: Dict[int, str] = {}
        try:
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                keys = _as_binary(batch.column(self.key_column), self.key_column)
                values = _as_binary(batch.column(self.value_column), self.value_column)
                for shard, k, v in _by_shard(keys, values, self.num_shards):
                    writer = writers.get(shard)
                    if writer is None:
                        files[shard] = os.path.join(self.runs, f"{shard:05}-{attempt}.arrow")
                        writer = writers[shard] = pa.ipc.new_stream(files[shard], schema)
                    writer.write_batch(pa.RecordBatch.from_arrays([k, v], schema=schema))
        finally:
            for writer in writers.values():
                writer.close()
        listing = sorted(files.items())
        yield pa.RecordBatch.from_pydict(
            {
                "partition": pa.array([partition] * len(listing), pa.int32()),
                "shard": pa.array([shard for shard, _ in listing], pa.int32()),
                "file": pa.array([file for _, file in listing], pa.string()),
            }
        )


def _as_binary(column: "pa.Array", name: str) -> "pa.Array":
    if column.null_count:
        raise ValueError(f"column {name!r} has a null: kuradb records have no null keys or values")
    if pa.types.is_string(column.type):
        return column.view(pa.binary())
    if pa.types.is_large_string(column.type):
        return column.view(pa.large_binary())
    return column


def _build_shards(spark: Any, plan: "KuraWriter", runs: Dict[int, List[str]]) -> Dict[int, str]:
    """Stages each shard with rows from its Arrow files, in as many tasks
    as the cluster runs at once (each task's start costs more than its
    share of a small shard); answers the attempt that staged each."""
    if not runs:
        return {}
    work = sorted(runs.items())
    build = _ShardBuilder(plan.dir, plan.job_id, plan.num_shards, plan.params, plan.append)
    tasks = max(1, min(len(work), spark.sparkContext.defaultParallelism))
    built = spark.sparkContext.parallelize(work, tasks).map(build).collect()
    return dict(built)


# How many bytes of rows an ordered class's shard is sorted in at once: a
# whole shard up to this, bounded memory beyond.
_SORT_CHUNK_BYTES = 256 << 20


def _set_sorted(db: Any, batches: List["pa.RecordBatch"]) -> None:
    """Writes the rows of ``batches`` sorted by key, which fills a tree's
    pages in order; the sort is stable, so a later row of a key stays later
    and wins."""
    table = pa.Table.from_batches(batches).combine_chunks()
    keys, values = table.column(0).chunk(0), table.column(1).chunk(0)
    order = pc.sort_indices(keys)
    db.set_arrow(keys.take(order), values.take(order))


class _ShardBuilder:
    """The task of the second job of ``write_sharded``: writes one shard's
    rows, its Arrow files read in partition order so that a key several
    tasks wrote keeps the last partition's value."""

    def __init__(self, dir: str, job_id: str, num_shards: int, params: Dict[str, str], append: bool) -> None:
        self.dir, self.job_id, self.num_shards, self.params, self.append = dir, job_id, num_shards, params, append

    def __call__(self, work: Tuple[int, List[str]]) -> Tuple[int, str]:
        shard, files = work
        attempt, _ = _attempt_id()
        if self.append:
            job = kuradb.PublishJob.appending(self.dir, self.job_id)
        else:
            job = kuradb.PublishJob(self.dir, self.job_id, self.num_shards, **self.params)
        ordered = self.params.get("dbm") in _ORDERED_CLASSES
        db = job.stage(shard, attempt)
        try:
            pending: List["pa.RecordBatch"] = []
            size = 0
            for file in files:
                with pa.OSFile(file, "rb") as source:
                    for batch in pa.ipc.open_stream(source):
                        if not ordered:
                            db.set_arrow(batch.column(0), batch.column(1))
                            continue
                        pending.append(batch)
                        size += batch.nbytes
                        if size >= _SORT_CHUNK_BYTES:
                            _set_sorted(db, pending)
                            pending, size = [], 0
            if pending:
                _set_sorted(db, pending)
        finally:
            db.close()
        # The commit makes every file durable before it publishes; syncing
        # here does that work in parallel, where the file was written.
        fd = os.open(job.staged_path(shard, attempt), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return shard, attempt


def _ensure_registered(spark: Any) -> None:
    # Automatic discovery needs the package importable where PySpark's
    # planner runs; the explicit registration does not.
    spark.dataSource.register(KuraDataSource)


# ---------------------------------------------------------------- reading


class KuraPartition(InputPartition):
    """One shard file of the version the read planned, and the keys to look
    up in it (None: the shard's records, within the pushed bounds)."""

    def __init__(self, shard: int, path: str, keys: Optional[List[bytes]] = None) -> None:
        super().__init__(shard)
        self.shard, self.path, self.keys = shard, path, keys


def _bytes_of(value: Any) -> Optional[bytes]:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return None


class KuraReader(DataSourceReader):
    """Reads the version current when the query was planned: a partition
    per shard, or per shard owning a key an equality or IN filter names."""

    def __init__(self, options: Dict[str, str], schema: StructType) -> None:
        self.dir = _path_of(options)
        manifest = _current_manifest(self.dir)
        if manifest is None:
            raise FileNotFoundError(f"{self.dir} is no published directory with a version: it has no CURRENT")
        self.key_column, self.value_column, self.key_is_string, self.value_is_string = _column_types(
            schema, options.get("key_column", "key"), options.get("value_column", "value"), "reads"
        )
        self.names = [f.name for f in schema.fields]
        self.params = _shard_params(manifest)
        self.num_shards = int(manifest["num_shards"])
        self.files = [os.path.join(manifest["_dir"], s["file"]) for s in manifest["shards"]]
        self.ordered = manifest["class"] in _ORDERED_CLASSES and not any(
            "comparator" in name for name in manifest.get("params", {})
        )
        self.batch_size = int(options.get("batch_size", 8192))
        # The pushed filters, all of which every row read satisfies.
        self.points: Optional[set] = None
        self.lower: Optional[Tuple[bytes, bool]] = None  # (bound, inclusive)
        self.upper: Optional[Tuple[bytes, bool]] = None
        self.prefix: Optional[bytes] = None
        self.pushed: List[str] = []

    def _push(self, f: Filter) -> bool:
        if tuple(a.lower() for a in getattr(f, "attribute", ())) != (self.key_column.lower(),):
            return False
        if isinstance(f, EqualTo):
            key = _bytes_of(f.value)
            if key is None:
                return False
            keys = {key}
        elif isinstance(f, In):
            keys = {_bytes_of(v) for v in f.value}
            if None in keys:
                return False
        elif not self.ordered:
            return False
        elif isinstance(f, StringStartsWith):
            prefix = _bytes_of(f.value)
            if prefix is None:
                return False
            if self.prefix is None or prefix.startswith(self.prefix):
                self.prefix = prefix
            elif not self.prefix.startswith(prefix):
                self.points = set()  # two prefixes no key has both of
            self.pushed.append(repr(f))
            return True
        elif isinstance(f, (GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)):
            bound = _bytes_of(f.value)
            if bound is None:
                return False
            inclusive = isinstance(f, (GreaterThanOrEqual, LessThanOrEqual))
            if isinstance(f, (GreaterThan, GreaterThanOrEqual)):
                if self.lower is None or (bound, not inclusive) > (self.lower[0], not self.lower[1]):
                    self.lower = (bound, inclusive)
            elif self.upper is None or (bound, inclusive) < (self.upper[0], self.upper[1]):
                self.upper = (bound, inclusive)
            self.pushed.append(repr(f))
            return True
        else:
            return False
        self.points = keys if self.points is None else self.points & keys
        self.pushed.append(repr(f))
        return True

    def _accepts(self, key: bytes) -> bool:
        if self.points is not None and key not in self.points:
            return False
        if self.prefix is not None and not key.startswith(self.prefix):
            return False
        if self.lower is not None and (key < self.lower[0] or (key == self.lower[0] and not self.lower[1])):
            return False
        if self.upper is not None and (key > self.upper[0] or (key == self.upper[0] and not self.upper[1])):
            return False
        return True

    def partitions(self) -> Sequence[InputPartition]:
        if self.points is None:
            return [KuraPartition(i, path) for i, path in enumerate(self.files)]
        owned: Dict[int, List[bytes]] = defaultdict(list)
        for key in sorted(k for k in self.points if self._accepts(k)):
            owned[kuradb.shard_of(key, self.num_shards)].append(key)
        if not owned:
            return [KuraPartition(0, self.files[0], [])]
        return [KuraPartition(shard, self.files[shard], keys) for shard, keys in sorted(owned.items())]

    def read(self, partition: InputPartition) -> Iterator["pa.RecordBatch"]:
        assert isinstance(partition, KuraPartition)
        if partition.keys == []:
            return
        with kuradb.DBM(partition.path, False, **self.params) as db:
            if partition.keys is not None:
                found = db.get_multi(partition.keys)
                pairs = [(k, found[k]) for k in partition.keys if k in found]
                if pairs:
                    yield self._batch(pairs)
                return
            if not self.ordered or (self.lower is None and self.upper is None and self.prefix is None):
                # A whole shard: whole batches from Rust, no object per record.
                records = iter(db.items())
                while True:
                    columns = records.next_columns(self.batch_size)
                    if columns is None:
                        return
                    yield self._columns_batch(*columns)
            batch: List[Tuple[bytes, bytes]] = []
            for key, value in self._records(db):
                if self._accepts(key):
                    batch.append((key, value))
                    if len(batch) >= self.batch_size:
                        yield self._batch(batch)
                        batch = []
            if batch:
                yield self._batch(batch)

    def _records(self, db: Any) -> Iterator[Tuple[bytes, bytes]]:
        """The shard's records, only those within the pushed range and
        prefix (and a few past its end) for an ordered class."""
        if not self.ordered or (self.lower is None and self.upper is None and self.prefix is None):
            yield from db.items()
            return
        start = self.lower[0] if self.lower is not None else b""
        if self.prefix is not None and self.prefix > start:
            start = self.prefix
        for key, value in db.range(start, None):
            if self.upper is not None and (key > self.upper[0] or (key == self.upper[0] and not self.upper[1])):
                return
            if self.prefix is not None and not key.startswith(self.prefix) and key > self.prefix:
                return
            yield key, value

    def _columns_batch(
        self, count: int, key_offsets: bytes, keys: bytes, value_offsets: bytes, values: bytes
    ) -> "pa.RecordBatch":
        key_array = pa.Array.from_buffers(pa.binary(), count, [None, pa.py_buffer(key_offsets), pa.py_buffer(keys)])
        value_array = pa.Array.from_buffers(
            pa.binary(), count, [None, pa.py_buffer(value_offsets), pa.py_buffer(values)]
        )
        return self._record_batch(key_array, value_array)

    def _batch(self, pairs: List[Tuple[bytes, bytes]]) -> "pa.RecordBatch":
        keys = pa.array([k for k, _ in pairs], pa.binary())
        return self._record_batch(keys, pa.array([v for _, v in pairs], pa.binary()))

    def _record_batch(self, keys: "pa.Array", values: "pa.Array") -> "pa.RecordBatch":
        if self.key_is_string:
            keys = keys.cast(pa.string())
        if self.value_is_string:
            values = values.cast(pa.string())
        columns = {self.key_column: keys, self.value_column: values}
        return pa.RecordBatch.from_arrays([columns[n] for n in self.names], names=self.names)


class KuraPushdownReader(KuraReader):
    """The reader with filter pushdown: equality and IN on the key become
    lookups on the shards owning the keys, prefix and range filters on an
    ordered class read only that stretch of each shard."""

    def pushFilters(self, filters: List[Filter]) -> Iterable[Filter]:
        for f in filters:
            if not self._push(f):
                yield f

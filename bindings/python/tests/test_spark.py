"""The kuradb format of PySpark's Python data source API (kuradb.spark):
writing published directories, reading them with filters pushed down.

One local Spark session for the module, small data."""

import json
import os
import pkgutil
import shutil
import sys

import pytest

import kuradb

pytest.importorskip("pyarrow", reason="pyarrow is not installed; the Spark data source is not tested")
pytest.importorskip("pyspark", reason="pyspark is not installed; the Spark data source is not tested")

_JDK = "/usr/lib/jvm/java-17-openjdk-amd64"
if not os.environ.get("JAVA_HOME") and os.path.isdir(_JDK):
    os.environ["JAVA_HOME"] = _JDK
if not os.environ.get("JAVA_HOME") and not shutil.which("java"):
    pytest.skip("no Java runtime (java or JAVA_HOME); the Spark data source is not tested", allow_module_level=True)

import kuradb.spark  # noqa: E402
from pyspark import TaskContext  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    # The workers must import this interpreter's kuradb.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2,3]")  # 2 threads, a task tried up to 3 times
        .appName("kuradb-tests")
        .config("spark.ui.enabled", "false")
        # Only the loopback interface; Spark takes free ports itself.
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "16")
        .config(kuradb.spark.PUSHDOWN_CONF, "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def records(n, prefix="k", tag="v"):
    return [(f"{prefix}{i}", f"{tag}{i}") for i in range(n)]


def frame(spark, rows, partitions=3, types="key string, value string"):
    return spark.createDataFrame(rows, types).repartition(partitions)


def manifest(dir):
    with open(os.path.join(dir, "CURRENT")) as f:
        name = f.read().strip()
    with open(os.path.join(dir, name, "MANIFEST.json")) as f:
        return name, json.load(f)


def no_staging(dir):
    staging = os.path.join(dir, "_staging")
    return not os.path.exists(staging) or not os.listdir(staging)


def contents(dir):
    with kuradb.DBM(dir) as db:
        return {k.decode(): v.decode() for k, v in db.items()}


def test_the_package_is_found_as_pyspark_finds_data_sources():
    # What pyspark.sql.worker.lookup_data_sources does.
    from pyspark.sql.datasource import DataSource

    names = {m.name for m in pkgutil.iter_modules()}
    assert "pyspark_kuradb" in names
    import pyspark_kuradb

    assert issubclass(pyspark_kuradb.DefaultSource, DataSource)
    assert pyspark_kuradb.DefaultSource.name() == "kuradb"


@pytest.mark.parametrize("dbm", ["hash", "tree"])
def test_round_trip(spark, tmp_path, dbm):
    dir = str(tmp_path / "pub")
    rows = records(120)
    # Three tasks, each with rows of every shard: the commit merges them.
    frame(spark, rows).write.format("kuradb").mode("overwrite").option("dbm", dbm).option("num_shards", 4).save(dir)
    _, m = manifest(dir)
    assert (m["class"], m["num_shards"], sum(s["records"] for s in m["shards"])) == (dbm, 4, 120)
    assert contents(dir) == dict(rows)
    assert kuradb.verify_published(dir)["records"] == "120"
    assert no_staging(dir)

    df = spark.read.format("kuradb").load(dir)
    assert df.schema.simpleString() == "struct<key:binary,value:binary>"
    assert df.rdd.getNumPartitions() == 4
    assert sorted((r.key.decode(), r.value.decode()) for r in df.collect()) == sorted(rows)
    typed = spark.read.format("kuradb").schema("key string, value string").load(dir)
    assert sorted((r.key, r.value) for r in typed.collect()) == sorted(rows)


def test_binary_columns_and_other_names(spark, tmp_path):
    dir = str(tmp_path / "pub")
    rows = [(bytes([i, 0, 255]), bytes([i]) * 3) for i in range(40)]
    df = spark.createDataFrame(rows, "k binary, v binary")
    df.write.format("kuradb").mode("overwrite").option("key_column", "k").option("value_column", "v").option(
        "num_shards", 3
    ).save(dir)
    with kuradb.DBM(dir) as db:
        assert dict(db.items()) == dict(rows)


def test_write_sharded_gives_each_shard_its_own_keys(spark, tmp_path):
    dir = str(tmp_path / "pub")
    rows = records(200)
    df = frame(spark, rows, partitions=2)
    partitioned = kuradb.spark.shard_partitioned(df, 5)
    assert partitioned.rdd.getNumPartitions() == 5
    placed = partitioned.select(F.spark_partition_id().alias("p"), "key").collect()
    assert all(r.p == kuradb.shard_of(r.key, 5) for r in placed) and len(placed) == 200

    kuradb.spark.write_sharded(df, dir, num_shards=5, dbm="tree", max_page_size=4096)
    name, m = manifest(dir)
    assert m["class"] == "tree" and m["params"].get("max_page_size") == "4096"
    for i, shard in enumerate(m["shards"]):
        with kuradb.DBM(os.path.join(dir, name, shard["file"]), False, dbm="tree") as db:
            keys = list(db.keys())
        assert keys == sorted(keys)
        assert all(kuradb.shard_of(k, 5) == i for k in keys)
        assert len(keys) == shard["records"]
    assert contents(dir) == dict(rows)


@pytest.mark.parametrize("dbm", ["hash", "tree"])
def test_write_sharded_keeps_the_last_partitions_value_and_ignores_failed_attempts(spark, tmp_path, dbm):
    def fail_first_attempt(batches):
        ctx = TaskContext.get()
        for i, batch in enumerate(batches):
            if i == 1 and ctx.partitionId() == 1 and ctx.attemptNumber() == 0:
                raise RuntimeError("the first attempt of partition 1 fails")
            yield batch

    dir = str(tmp_path / "pub")
    # Partition 0 holds the first half, partition 1 the second: "dup" is in both.
    first, second = records(100) + [("dup", "first")], records(100, prefix="m") + [("dup", "second")]
    df = spark.sparkContext.parallelize(first + second, 2).toDF("key string, value string")
    df = df.mapInArrow(fail_first_attempt, "key string, value string")
    kuradb.spark.write_sharded(df, dir, num_shards=3, dbm=dbm)
    assert contents(dir) == {**dict(first), **dict(second)} and contents(dir)["dup"] == "second"
    assert kuradb.verify_published(dir)["records"] == "201"
    assert no_staging(dir)

    nulls = spark.createDataFrame([("a", "x"), (None, "y")], "key string, value string")
    with pytest.raises(Exception, match="column 'key' has a null"):
        kuradb.spark.write_sharded(nulls, dir, num_shards=3)
    assert contents(dir)["dup"] == "second" and no_staging(dir)


def test_overwrite_append_and_keep(spark, tmp_path):
    dir = str(tmp_path / "pub")
    first = records(50)
    frame(spark, first).write.format("kuradb").mode("overwrite").option("dbm", "tree").option("num_shards", 3).save(
        dir
    )
    more = records(30, tag="new") + records(20, prefix="m")  # k0..k29 change, m0..m19 are new
    frame(spark, more).write.format("kuradb").mode("append").save(dir)
    expected = {**dict(first), **dict(more)}
    assert contents(dir) == expected
    _, m = manifest(dir)
    assert (m["version"], m["class"], m["num_shards"]) == (2, "tree", 3)

    kuradb.spark.write_sharded(frame(spark, records(5, prefix="z")), dir, mode="append")
    assert contents(dir) == {**expected, **dict(records(5, prefix="z"))}

    with pytest.raises(Exception, match="append keeps them"):
        frame(spark, first).write.format("kuradb").mode("append").option("num_shards", 4).save(dir)

    frame(spark, records(7)).write.format("kuradb").mode("overwrite").option("num_shards", 2).option(
        "keep", 3
    ).save(dir)
    assert contents(dir) == dict(records(7))
    assert sorted(n for n in os.listdir(dir) if n.startswith("v-")) == ["v-2", "v-3", "v-4"]
    frame(spark, records(8)).write.format("kuradb").mode("overwrite").option("keep", 1).save(dir)
    assert sorted(n for n in os.listdir(dir) if n.startswith("v-")) == ["v-5"]


def test_write_sharded_errorifexists_and_ignore(spark, tmp_path):
    dir = str(tmp_path / "pub")
    # Without a version, both write the first.
    kuradb.spark.write_sharded(frame(spark, records(10)), dir, num_shards=2, mode="errorifexists")
    assert contents(dir) == dict(records(10))
    for mode in ("errorifexists", "error"):
        with pytest.raises(FileExistsError, match=r"already has a version \(v-1\): mode '" + mode):
            kuradb.spark.write_sharded(frame(spark, records(3, tag="new")), dir, num_shards=2, mode=mode)
    kuradb.spark.write_sharded(frame(spark, records(3, tag="new")), dir, num_shards=2, mode="ignore")
    assert manifest(dir)[1]["version"] == 1 and contents(dir) == dict(records(10)) and no_staging(dir)
    other = str(tmp_path / "other")
    kuradb.spark.write_sharded(frame(spark, records(4)), other, num_shards=2, mode="ignore")
    assert contents(other) == dict(records(4))
    with pytest.raises(ValueError, match="mode must be one of .*not 'upsert'"):
        kuradb.spark.write_sharded(frame(spark, records(3)), dir, num_shards=2, mode="upsert")


def test_spark_refuses_errorifexists_and_ignore_for_the_format(spark, tmp_path):
    # Spark itself allows a Python data source only append and overwrite,
    # before the source runs; write_sharded takes the other modes.
    dir = str(tmp_path / "pub")
    for mode in ("errorifexists", "ignore"):
        with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
            frame(spark, records(3)).write.format("kuradb").mode(mode).save(dir)
    assert not os.path.exists(os.path.join(dir, "CURRENT"))


def test_a_failed_attempt_leaves_no_doubled_or_partial_shard(spark, tmp_path):
    # Defined here, so that Spark pickles them by value (the workers cannot
    # import this test module).
    def fail_first_attempt(batches):
        # Passes some batches on, so the writer has staged rows, then fails;
        # the retry runs it all.
        ctx = TaskContext.get()
        for i, batch in enumerate(batches):
            if i == 2 and ctx.partitionId() == 1 and ctx.attemptNumber() == 0:
                raise RuntimeError("the first attempt of partition 1 fails")
            yield batch

    def always_fail(batches):
        for i, batch in enumerate(batches):
            if i == 1:
                raise RuntimeError("every attempt fails")
            yield batch

    dir = str(tmp_path / "pub")
    rows = records(300)
    df = frame(spark, rows, partitions=2).mapInArrow(fail_first_attempt, "key string, value string")
    df.write.format("kuradb").mode("overwrite").option("dbm", "hash").option("num_shards", 3).save(dir)
    _, m = manifest(dir)
    assert sum(s["records"] for s in m["shards"]) == 300
    assert contents(dir) == dict(rows)
    assert kuradb.verify_published(dir)["version"] == "1"
    assert no_staging(dir)

    # A job whose every attempt fails is aborted: the version stays, no staging is left.
    bad = frame(spark, records(100, tag="bad"), partitions=2).mapInArrow(always_fail, "key string, value string")
    with pytest.raises(Exception, match="every attempt fails"):
        bad.write.format("kuradb").mode("overwrite").option("num_shards", 3).save(dir)
    assert manifest(dir)[1]["version"] == 1 and contents(dir) == dict(rows)
    assert no_staging(dir)


def test_a_wrong_schema_is_an_error_naming_the_one_expected(spark, tmp_path):
    dir = str(tmp_path / "pub")
    three = spark.createDataFrame([("a", "b", 1)], "key string, value string, n int")
    with pytest.raises(Exception, match="exactly two columns, 'key' and 'value'.*struct<key:string,value:string,n:int>"):
        three.write.format("kuradb").mode("overwrite").save(dir)
    numbers = spark.createDataFrame([("a", 1)], "key string, value int")
    with pytest.raises(Exception, match="column 'value' is int"):
        numbers.write.format("kuradb").mode("overwrite").save(dir)
    assert not os.path.exists(os.path.join(dir, "CURRENT"))


@pytest.fixture(scope="module")
def published(spark, tmp_path_factory):
    dirs = {}
    for dbm in ("tree", "hash"):
        dir = str(tmp_path_factory.mktemp("pushdown") / dbm)
        kuradb.spark.write_sharded(frame(spark, records(200)), dir, num_shards=4, dbm=dbm)
        dirs[dbm] = dir
    return dirs


# Range and prefix filters are pushed for an ordered class (tree) and given
# back to Spark for a hash class.
CONDITIONS = {
    "tree": [
        "key = 'k17'",
        "key = 'absent'",
        "key in ('k1', 'k2', 'k150', 'absent')",
        "key like 'k1%'",
        "key like 'k19%' and key like 'k1%'",
        "key >= 'k15' and key < 'k3'",
        "key > 'k15' and key <= 'k3'",
        "key = 'k17' and key > 'k2'",
        "key in ('k17', 'k18', 'k190') and key like 'k1%' and not (value = 'v18')",
        "key like '%7' or key < 'k105'",
    ],
    "hash": ["key in ('k1', 'k150', 'absent')", "key like 'k1%'", "key > 'k15' and key <= 'k3'"],
}


@pytest.mark.parametrize("dbm", ["tree", "hash"])
def test_pushed_filters_answer_as_spark_filtering(spark, published, dbm):
    reader = spark.read.format("kuradb").schema("key string, value string")
    # Spark's own filtering of the same rows.
    rows = spark.createDataFrame(records(200), "key string, value string").cache()
    for condition in CONDITIONS[dbm]:
        pushed = reader.load(published[dbm]).filter(condition)
        assert sorted(pushed.collect()) == sorted(rows.filter(condition).collect()), condition


def test_equality_and_in_read_only_the_owning_shards(spark, published):
    reader = spark.read.format("kuradb").schema("key string, value string")
    one = reader.load(published["hash"]).filter("key = 'k42'")
    assert one.rdd.getNumPartitions() == 1
    assert [tuple(r) for r in one.collect()] == [("k42", "v42")]
    keys = ["k1", "k2", "k3", "k4", "k5"]
    owners = {kuradb.shard_of(k, 4) for k in keys}
    some = reader.load(published["tree"]).filter(F.col("key").isin(keys))
    assert some.rdd.getNumPartitions() == len(owners)
    assert sorted(r.key for r in some.collect()) == keys
    # Binary keys compare as bytes.
    binary = spark.read.format("kuradb").load(published["tree"]).filter(F.col("key") == F.lit(b"k7"))
    assert binary.rdd.getNumPartitions() == 1 and binary.collect()[0].value == b"v7"


def test_register_turns_pushdown_on(spark):
    spark.conf.set(kuradb.spark.PUSHDOWN_CONF, "false")
    kuradb.spark.register(spark)
    assert spark.conf.get(kuradb.spark.PUSHDOWN_CONF) == "true"


class CountingDBM:
    """Stands in for kuradb.DBM in the reader: counts the records its
    iterators hand out (the records a read visits)."""

    visited = 0
    real = kuradb.DBM

    def __init__(self, *args, **kwargs):
        self.db = CountingDBM.real(*args, **kwargs)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.db.close()

    def range(self, *args):
        for record in self.db.range(*args):
            CountingDBM.visited += 1
            yield record

    def items(self):
        return CountingItems(iter(self.db.items()))

    def get_multi(self, keys):
        CountingDBM.visited += len(keys)
        return self.db.get_multi(keys)


class CountingItems:
    def __init__(self, records):
        self.records = records

    def __iter__(self):
        return self

    def __next__(self):
        record = next(self.records)
        CountingDBM.visited += 1
        return record

    def next_columns(self, count):
        columns = self.records.next_columns(count)
        if columns is not None:
            CountingDBM.visited += columns[0]
        return columns


def visit(dir, filters, monkeypatch):
    """The keys a pushdown read of ``dir`` with ``filters`` answers, and the
    records it visited, read in this process as Spark's tasks would."""
    from pyspark.sql.types import StringType, StructField, StructType

    monkeypatch.setattr(kuradb, "DBM", CountingDBM)
    CountingDBM.visited = 0
    schema = StructType([StructField("key", StringType()), StructField("value", StringType())])
    reader = kuradb.spark.KuraPushdownReader({"path": dir}, schema)
    assert list(reader.pushFilters(filters)) == []
    keys = []
    for partition in reader.partitions():
        for batch in reader.read(partition):
            keys += batch.column(0).to_pylist()
    return sorted(keys), CountingDBM.visited


def test_range_and_prefix_pushdown_visit_only_their_stretch(published, monkeypatch):
    from pyspark.sql.datasource import GreaterThanOrEqual, LessThan, StringStartsWith

    tree = published["tree"]
    assert visit(tree, [], monkeypatch) == (sorted(k for k, _ in records(200)), 200)
    expected = ["k15"] + [f"k15{i}" for i in range(10)]
    # Four shards: each stops at the first key past the stretch.
    keys, visited = visit(tree, [GreaterThanOrEqual(("key",), "k15"), LessThan(("key",), "k16")], monkeypatch)
    assert keys == expected and visited <= len(expected) + 4
    keys, visited = visit(tree, [StringStartsWith(("key",), "k15")], monkeypatch)
    assert keys == expected and visited <= len(expected) + 4


@pytest.mark.parametrize("chunk", [1, 3000, 1 << 30])
def test_a_shard_of_an_ordered_class_is_built_in_sorted_chunks(tmp_path, monkeypatch, chunk):
    # The builder of write_sharded's second job, run here on Arrow files
    # made by hand; a small chunk sorts a few batches at a time.
    import pyarrow as pa

    monkeypatch.setattr(kuradb.spark, "_SORT_CHUNK_BYTES", chunk)
    dir = str(tmp_path / "pub")
    schema = pa.schema([("key", pa.binary()), ("value", pa.binary())])
    files, expected = [], {}
    for part in range(3):
        file = str(tmp_path / f"run{part}.arrow")
        with pa.ipc.new_stream(file, schema) as writer:
            for b in range(4):
                keys = [f"k{(part * 7 + b * 13 + i * 31) % 97:02d}".encode() for i in range(20)]
                values = [f"{part}.{b}.{i}".encode() for i in range(20)]
                columns = [pa.array(keys, pa.binary()), pa.array(values, pa.binary())]
                writer.write_batch(pa.RecordBatch.from_arrays(columns, schema=schema))
                expected.update(zip(keys, values))
        files.append(file)
    job = kuradb.PublishJob(dir, "job-1", 1, dbm="tree")
    build = kuradb.spark._ShardBuilder(dir, "job-1", 1, {"dbm": "tree"}, False)
    shard, attempt = build((0, files))
    job.commit({shard: attempt}, create_missing=True)
    with kuradb.DBM(dir) as db:
        assert dict(db.items()) == expected

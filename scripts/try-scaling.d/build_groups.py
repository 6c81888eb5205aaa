"""The Spark job of scripts/try-scaling: builds one published directory per
nutcracker server (a "group"), each split into kuradb shards.

    python build_groups.py OUT_DIR NUM_GROUPS NUM_SHARDS EDITION

Each record goes to the group nutcracker will send its key to (twemproxy's
fnv1a_64 with modula over NUM_GROUPS servers: twemproxy_hash.py, computed
by an Arrow UDF), and within its group to the shard kuradb routes it to
(`kuradb.shard_of`, which `write_sharded` does). OUT_DIR/group-G is then
served by the G-th server of the nutcracker pool (in the order the pool
lists them). The data set is `sample_records(EDITION)`, whose values name
the edition, so that a reader tells a new version from the one before;
check.py reads it back. Each run publishes a new version of every group's
directory. Runs Spark in local mode."""

import os
import sys
from typing import List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))


def sample_records(edition: int) -> List[Tuple[str, str]]:
    """The sample data set's edition ``edition``: user records, and a few
    keys outside ASCII (whose bytes above 0x7f twemproxy's hash treats as it
    does)."""
    records = [
        (f"user:{i:06d}", f'{{"id":{i},"name":"user {i}","score":{(i * 7919 + edition) % 1000},"edition":{edition}}}')
        for i in range(20000)
    ]
    cities = {"münchen": "Bayern", "zürich": "Zürich", "東京": "日本", "malmö": "Skåne", "são paulo": "Brasil"}
    records += [(f"city:{name}", f"{region} ({edition})") for name, region in cities.items()]
    return records


def main() -> None:
    if len(sys.argv) != 5:
        raise SystemExit(f"usage: {sys.argv[0]} OUT_DIR NUM_GROUPS NUM_SHARDS EDITION")
    out, num_groups, num_shards, edition = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

    import kuradb.spark
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.functions import arrow_udf

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("try-scaling")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(num_shards))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kuradb.spark.register(spark)
    # The workers import the routing from the file the job ships them.
    spark.sparkContext.addPyFile(os.path.join(HERE, "twemproxy_hash.py"))
    from twemproxy_hash import server_of_arrow

    @arrow_udf("int")
    def group_of(keys):
        return server_of_arrow(keys, num_groups)

    df = spark.createDataFrame(sample_records(edition), "key string, value string")
    routed = df.withColumn("group", group_of(F.col("key"))).cache()
    for group in range(num_groups):
        rows = routed.filter(F.col("group") == group).drop("group")
        path = os.path.join(out, f"group-{group}")
        kuradb.spark.write_sharded(rows, path, num_shards=num_shards, dbm="hash", num_buckets=20000)
        with kuradb.DBM(path) as db:
            version = open(os.path.join(path, "CURRENT")).read().strip()
            print(f"{path}: version {version}, {len(db)} records in {num_shards} shards", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()

package io.kuradb.bench;

import io.kuradb.Dbm;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * N sets then N gets of 8-byte keys and 100-byte values, through
 * io.kuradb.Dbm, through the tkrzw compat layer, and through rocksdbjni when
 * it is on the class path. Run by scripts/bench-java (docs/java.md):
 * {@code Bench LAYER N DIR} with LAYER one of kuradb, tkrzw, rocksdb.
 */
public final class Bench {
  private Bench() {}

  /** A store under test: set and get of byte arrays. */
  interface Store extends AutoCloseable {
    void set(byte[] key, byte[] value) throws Throwable;

    byte[] get(byte[] key) throws Throwable;

    @Override
    void close() throws Exception;
  }

  /** The key of record {@code i}: 8 decimal digits, as {@code kura perf sequence} makes them. */
  static byte[] key(int i) {
    byte[] k = new byte[8];
    for (int p = 7; p >= 0; p--) {
      k[p] = (byte) ('0' + i % 10);
      i /= 10;
    }
    return k;
  }

  public static void main(String[] args) throws Throwable {
    String layer = args.length > 0 ? args[0] : "kuradb";
    int n = args.length > 1 ? Integer.parseInt(args[1]) : 1_000_000;
    Path dir = args.length > 2 ? Path.of(args[2]) : Files.createTempDirectory("kuradb-bench");
    byte[] value = new byte[100];
    for (int i = 0; i < value.length; i++) {
      value[i] = (byte) ('a' + i % 26);
    }
    byte[][] keys = new byte[n][];
    for (int i = 0; i < n; i++) {
      keys[i] = key(i);
    }
    try (Store store = open(layer, dir, n)) {
      long t0 = System.nanoTime();
      for (int i = 0; i < n; i++) {
        store.set(keys[i], value);
      }
      long t1 = System.nanoTime();
      long found = 0;
      for (int i = 0; i < n; i++) {
        if (store.get(keys[i]) != null) {
          found++;
        }
      }
      long t2 = System.nanoTime();
      if (found != n) {
        throw new AssertionError("found " + found + " of " + n);
      }
      System.out.printf("%s: %d sets %.3f s (%.0f ns/op), %d gets %.3f s (%.0f ns/op)%n",
          layer, n, (t1 - t0) / 1e9, (double) (t1 - t0) / n, n, (t2 - t1) / 1e9,
          (double) (t2 - t1) / n);
    }
  }

  static Store open(String layer, Path dir, int n) throws Throwable {
    String buckets = Integer.toString(n * 2);
    switch (layer) {
      case "kuradb": {
        Dbm db = Dbm.open(dir.resolve("bench-kuradb.kh").toString(), true,
            Map.of("truncate", "true", "num_buckets", buckets));
        return new Store() {
          public void set(byte[] k, byte[] v) {
            db.set(k, v);
          }

          public byte[] get(byte[] k) {
            return db.get(k);
          }

          public void close() {
            db.close();
          }
        };
      }
      case "tkrzw": {
        tkrzw.DBM dbm = new tkrzw.DBM();
        dbm.open(dir.resolve("bench-tkrzw.tkh").toString(), true,
            "truncate=true,num_buckets=" + buckets).orDie();
        return new Store() {
          public void set(byte[] k, byte[] v) {
            dbm.set(k, v);
          }

          public byte[] get(byte[] k) {
            return dbm.get(k);
          }

          public void close() {
            dbm.close().orDie();
          }
        };
      }
      case "rocksdb":
        return rocksdb(dir.resolve("bench-rocksdb"));
      default:
        throw new IllegalArgumentException("layer must be kuradb, tkrzw or rocksdb: " + layer);
    }
  }

  /** rocksdbjni through method handles, so that the normal build does not need it. */
  static Store rocksdb(Path path) throws Throwable {
    MethodHandles.Lookup lookup = MethodHandles.publicLookup();
    Class<?> rocks = Class.forName("org.rocksdb.RocksDB");
    Class<?> options = Class.forName("org.rocksdb.Options");
    rocks.getMethod("loadLibrary").invoke(null);
    Object opts = options.getConstructor().newInstance();
    options.getMethod("setCreateIfMissing", boolean.class).invoke(opts, true);
    Object db = rocks.getMethod("open", options, String.class).invoke(null, opts, path.toString());
    MethodHandle put = lookup.findVirtual(rocks, "put",
        MethodType.methodType(void.class, byte[].class, byte[].class)).bindTo(db);
    MethodHandle get = lookup.findVirtual(rocks, "get",
        MethodType.methodType(byte[].class, byte[].class)).bindTo(db);
    return new Store() {
      public void set(byte[] k, byte[] v) throws Throwable {
        put.invokeExact(k, v);
      }

      public byte[] get(byte[] k) throws Throwable {
        return (byte[]) get.invokeExact(k);
      }

      public void close() throws Exception {
        rocks.getMethod("close").invoke(db);
        options.getMethod("close").invoke(opts);
      }
    };
  }
}

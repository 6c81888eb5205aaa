package tkrzw;

import io.kuradb.Dbm;
import io.kuradb.KuraException;
import io.kuradb.Native;
import java.lang.ref.Reference;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The reference's polymorphic database manager ({@code tkrzw.DBM} of
 * tkrzw-java) over kuradb, so that a program written for it runs with only
 * its class path changed. Methods answer a {@link Status} where the
 * reference does, and take its parameters ({@code dbm="TreeDBM"},
 * {@code num_buckets}, {@code file}, …). The files are kuradb's.
 *
 * <p>Differences: for try-with-resources, {@link #closing()} answers an
 * {@link AutoCloseable} that closes the database and checks the status with
 * {@code orDie} ({@code DBM} itself cannot be one: its {@code close()}
 * answers a {@code Status}, as the reference's does); using a DBM that is not open throws
 * {@link IllegalArgumentException} ("not opened database"), and opening one that is open
 * throws it ("opened database"), as the reference's do; {@code concurrent} is accepted and ignored
 * (kuradb is always thread-safe). All methods may be called from several
 * threads at once.
 */
public class DBM {
  static {
    Native.load();
  }

  /** The special bytes that mean "any value" (expected) or "no change" (desired). */
  public static final byte[] ANY_BYTES = new byte[] {'\0', '[', 'A', 'N', 'Y', ']', '\0'};

  /** The special string that means "any value" (expected) or "no change" (desired). */
  public static final String ANY_STRING = new String("\0[ANY]\0");

  private volatile Dbm db;
  /** Opened with an empty path: on memory, with no file (as the reference, it says so). */
  private volatile boolean noFile;
  /** Opened writable with {@code sync_hard}: a hard synchronization before the close. */
  private volatile boolean syncHard;

  /** A database manager, not yet open. */
  public DBM() {}

  private Dbm open() {
    Dbm d = db;
    if (d == null) {
      throw new IllegalArgumentException("not opened database");
    }
    return d;
  }

  long handle() {
    return Native.handleOf(open());
  }

  private interface Op {
    void run(long handle);
  }

  /** Runs {@code op}, answering its outcome as a status. */
  private Status call(Op op) {
    return Calls.status(this, () -> op.run(handle()));
  }

  /** Closes the database if it is open and releases the object. */
  public void destruct() {
    if (db != null) {
      close();
    }
  }

  /**
   * Opens a database file.
   *
   * @param path the path; empty: an on-memory database with no file, of the class {@code dbm}
   *     names (BabyDBM, CacheDBM, StdHashDBM, StdTreeDBM, TinyDBM, the default), which takes
   *     writes even when not writable; a file class answers NOT_FOUND_ERROR
   * @param writable whether to open for writing
   * @param params the reference's parameters, or null
   * @return the status
   * @throws IllegalArgumentException if the database is open already, as the reference's open
   *     throws then
   */
  public synchronized Status open(String path, boolean writable, Map<String, String> params) {
    if (db != null) {
      throw new IllegalArgumentException("opened database");
    }
    try {
      Map<String, String> given = params == null ? new LinkedHashMap<>() : new LinkedHashMap<>(params);
      boolean hard = Utility.flag("sync_hard", given.remove("sync_hard"));
      db = Dbm.open(path, writable, Utility.openParams(path, given));
      noFile = path.isEmpty();
      syncHard = hard && writable && !noFile;
      return new Status();
    } catch (KuraException e) {
      return Status.of(e);
    } catch (IllegalArgumentException e) {
      return new Status(Status.INVALID_ARGUMENT_ERROR, e.getMessage());
    }
  }

  /**
   * Opens a database file with parameters as {@code "key=value,key=value"}.
   *
   * @param path the path
   * @param writable whether to open for writing
   * @param params the parameters
   * @return the status
   */
  public Status open(String path, boolean writable, String params) {
    return open(path, writable, Utility.parseParams(params));
  }

  /**
   * Opens a database file without parameters.
   *
   * @param path the path
   * @param writable whether to open for writing
   * @return the status
   */
  public Status open(String path, boolean writable) {
    return open(path, writable, (Map<String, String>) null);
  }

  /** An {@link AutoCloseable} that closes its {@link DBM}, throwing {@link StatusException} on failure. */
  public static final class Closing implements AutoCloseable {
    private final DBM dbm;

    Closing(DBM dbm) {
      this.dbm = dbm;
    }

    /** @return the database */
    public DBM dbm() {
      return dbm;
    }

    /** Closes the database if it is still open. */
    @Override
    public void close() {
      if (dbm.isOpen()) {
        dbm.close().orDie();
      }
    }
  }

  /**
   * For try-with-resources: {@code try (DBM.Closing c = dbm.closing()) { ... }}.
   *
   * @return an {@link AutoCloseable} that closes this database
   */
  public Closing closing() {
    return new Closing(this);
  }

  /**
   * Closes the database, first synchronizing it with the device if it was opened with {@code
   * sync_hard}, as the reference's close does then.
   *
   * @return the status of closing
   * @throws IllegalArgumentException if the database is not open (closed already, or never
   *     opened), as the reference's close throws then
   */
  public synchronized Status close() {
    Dbm d = open();
    try {
      try {
        if (syncHard) {
          d.synchronize(true);
        }
      } finally {
        d.close();
      }
      return new Status();
    } catch (KuraException e) {
      return Status.of(e);
    } finally {
      db = null;
    }
  }

  /**
   * @param key the key
   * @return whether it has a record
   */
  public boolean contains(byte[] key) {
    return Calls.reporting(this, null, () -> Native.contains(handle(), key), false);
  }

  /**
   * @param key the key
   * @return whether it has a record
   */
  public boolean contains(String key) {
    return contains(Convert.utf8(key));
  }

  /**
   * @param key the key
   * @param status receives the outcome (NOT_FOUND_ERROR if absent), or null
   * @return the value, or null
   */
  public byte[] get(byte[] key, Status status) {
    Status.And<byte[]> r = Calls.and(this, () -> Native.get(handle(), key), Status.NOT_FOUND_ERROR);
    Convert.report(status, r.status);
    return r.value;
  }

  /**
   * @param key the key
   * @return the value, or null
   */
  public byte[] get(byte[] key) {
    return get(key, null);
  }

  /**
   * @param key the key
   * @param status receives the outcome, or null
   * @return the value as UTF-8, or null
   */
  public String get(String key, Status status) {
    return Convert.text(get(Convert.utf8(key), status));
  }

  /**
   * @param key the key
   * @return the value as UTF-8, or null
   */
  public String get(String key) {
    return get(key, null);
  }

  /**
   * @param keys the keys
   * @return the records found (absent keys are left out)
   */
  public Map<byte[], byte[]> getMulti(byte[][] keys) {
    byte[][] values;
    try {
      values = Native.getMulti(handle(), keys);
    } finally {
      Reference.reachabilityFence(this);
    }
    Map<byte[], byte[]> found = new LinkedHashMap<>();
    for (int i = 0; i < keys.length; i++) {
      if (values[i] != null) {
        found.put(keys[i], values[i]);
      }
    }
    return found;
  }

  /**
   * @param keys the keys
   * @return the records found, as strings
   */
  public Map<String, String> getMulti(String[] keys) {
    byte[][] raw = new byte[keys.length][];
    for (int i = 0; i < keys.length; i++) {
      raw[i] = Convert.utf8(keys[i]);
    }
    Map<String, String> found = new LinkedHashMap<>();
    for (Map.Entry<byte[], byte[]> e : getMulti(raw).entrySet()) {
      found.put(Convert.text(e.getKey()), Convert.text(e.getValue()));
    }
    return found;
  }

  /**
   * @param key the key
   * @param value the value
   * @param overwrite whether to replace an existing value
   * @return the status; DUPLICATION_ERROR if the key exists and {@code overwrite} is false
   */
  public Status set(byte[] key, byte[] value, boolean overwrite) {
    return Calls.check(this, () -> Native.set(handle(), key, value, overwrite), Status.DUPLICATION_ERROR);
  }

  /**
   * @param key the key
   * @param value the value
   * @return the status
   */
  public Status set(byte[] key, byte[] value) {
    return set(key, value, true);
  }

  /**
   * @param key the key
   * @param value the value
   * @param overwrite whether to replace an existing value
   * @return the status
   */
  public Status set(String key, String value, boolean overwrite) {
    return set(Convert.utf8(key), Convert.utf8(value), overwrite);
  }

  /**
   * @param key the key
   * @param value the value
   * @return the status
   */
  public Status set(String key, String value) {
    return set(key, value, true);
  }

  /**
   * @param records the records
   * @param overwrite whether to replace existing values
   * @return the status; DUPLICATION_ERROR if a key exists and {@code overwrite} is false (that
   *     record stays, the others are stored)
   */
  public Status setMulti(Map<byte[], byte[]> records, boolean overwrite) {
    if (!overwrite) {
      // As the reference: the records that exist stay and the others are set.
      Status status = new Status();
      for (Map.Entry<byte[], byte[]> record : records.entrySet()) {
        status.join(set(record.getKey(), record.getValue(), false));
        if (status.getCode() != Status.SUCCESS && status.getCode() != Status.DUPLICATION_ERROR) {
          break;
        }
      }
      return status;
    }
    byte[][][] kv = Convert.split(records);
    return Calls.check(this, () -> Native.setMulti(handle(), kv[0], kv[1], overwrite),
        Status.DUPLICATION_ERROR);
  }

  /**
   * @param records the records, as strings
   * @param overwrite whether to replace existing values
   * @return the status
   */
  public Status setMultiString(Map<String, String> records, boolean overwrite) {
    return setMulti(Convert.raw(records, false), overwrite);
  }

  /**
   * @param key the key
   * @param value the value
   * @param overwrite whether to replace an existing value
   * @return the status and the old value (null if there was none)
   */
  public Status.And<byte[]> setAndGet(byte[] key, byte[] value, boolean overwrite) {
    Status.And<byte[]> result = new Status.And<>();
    try {
      result.value = Native.setAndGet(handle(), key, value, overwrite)[0];
      if (result.value != null && !overwrite) {
        result.status = new Status(Status.DUPLICATION_ERROR);
      }
    } catch (KuraException e) {
      result.status = Status.of(e);
    } finally {
      Reference.reachabilityFence(this);
    }
    return result;
  }

  /**
   * @param key the key
   * @param value the value
   * @param overwrite whether to replace an existing value
   * @return the status and the old value as a string
   */
  public Status.And<String> setAndGet(String key, String value, boolean overwrite) {
    Status.And<byte[]> r = setAndGet(Convert.utf8(key), Convert.utf8(value), overwrite);
    return new Status.And<>(r.status, Convert.text(r.value));
  }

  /**
   * @param key the key
   * @return the status; NOT_FOUND_ERROR if there was no record
   */
  public Status remove(byte[] key) {
    return Calls.check(this, () -> Native.remove(handle(), key), Status.NOT_FOUND_ERROR);
  }

  /**
   * @param key the key
   * @return the status
   */
  public Status remove(String key) {
    return remove(Convert.utf8(key));
  }

  /**
   * @param keys the keys
   * @return the status; NOT_FOUND_ERROR if some had no record (the others are removed)
   */
  public Status removeMulti(byte[][] keys) {
    return Calls.check(this, () -> Native.removeMulti(handle(), keys) == keys.length,
        Status.NOT_FOUND_ERROR);
  }

  /**
   * @param keys the keys
   * @return the status
   */
  public Status removeMulti(String[] keys) {
    return removeMulti(Convert.utf8s(keys));
  }

  /**
   * @param key the key
   * @return the status (NOT_FOUND_ERROR if absent) and the removed value
   */
  public Status.And<byte[]> removeAndGet(byte[] key) {
    return Calls.and(this, () -> Native.removeAndGet(handle(), key), Status.NOT_FOUND_ERROR);
  }

  /**
   * @param key the key
   * @return the status and the removed value as a string
   */
  public Status.And<String> removeAndGet(String key) {
    Status.And<byte[]> r = removeAndGet(Convert.utf8(key));
    return new Status.And<>(r.status, Convert.text(r.value));
  }

  /**
   * @param key the key
   * @param value what to append
   * @param delim what to put after an existing value
   * @return the status
   */
  public Status append(byte[] key, byte[] value, byte[] delim) {
    return call(h -> Native.append(h, key, value, delim));
  }

  /**
   * @param key the key
   * @param value what to append
   * @param delim what to put after an existing value
   * @return the status
   */
  public Status append(String key, String value, String delim) {
    return append(Convert.utf8(key), Convert.utf8(value), Convert.utf8(delim));
  }

  /**
   * @param records what to append to each key
   * @param delim what to put after existing values
   * @return the status
   */
  public Status appendMulti(Map<byte[], byte[]> records, byte[] delim) {
    byte[][][] kv = Convert.split(records);
    return call(h -> Native.appendMulti(h, kv[0], kv[1], delim));
  }

  /**
   * @param records what to append to each key, as strings
   * @param delim what to put after existing values
   * @return the status
   */
  public Status appendMulti(Map<String, String> records, String delim) {
    return appendMulti(Convert.raw(records, false), Convert.utf8(delim));
  }

  /**
   * Compare-and-exchange.
   *
   * @param key the key
   * @param expected the value it must have; null: absent; {@link #ANY_BYTES}: any value
   * @param desired the value it gets; null: removed; {@link #ANY_BYTES}: unchanged
   * @return the status; INFEASIBLE_ERROR if the record did not match
   */
  public Status compareExchange(byte[] key, byte[] expected, byte[] desired) {
    return compareExchangeAndGet(key, expected, desired).status;
  }

  /**
   * Compare-and-exchange with strings ({@link #ANY_STRING} as {@link #ANY_BYTES}).
   *
   * @param key the key
   * @param expected the value it must have
   * @param desired the value it gets
   * @return the status
   */
  public Status compareExchange(String key, String expected, String desired) {
    return compareExchangeAndGet(key, expected, desired).status;
  }

  /**
   * Compare-and-exchange answering the old value.
   *
   * @param key the key
   * @param expected the value it must have; null: absent; {@link #ANY_BYTES}: any value
   * @param desired the value it gets; null: removed; {@link #ANY_BYTES}: unchanged
   * @return the status (INFEASIBLE_ERROR if it did not match) and the old value
   */
  public Status.And<byte[]> compareExchangeAndGet(byte[] key, byte[] expected, byte[] desired) {
    Status.And<byte[]> result = new Status.And<>();
    try {
      byte[][] r = Native.compareExchange(handle(), key,
          expected == ANY_BYTES ? null : expected, expected == ANY_BYTES,
          desired == ANY_BYTES ? null : desired, desired == ANY_BYTES);
      result.value = r[0];
      if (r[1] == null) {
        result.status = new Status(Status.INFEASIBLE_ERROR);
      }
    } catch (KuraException e) {
      result.status = Status.of(e);
    } finally {
      Reference.reachabilityFence(this);
    }
    return result;
  }

  /**
   * Compare-and-exchange with strings, answering the old value.
   *
   * @param key the key
   * @param expected the value it must have
   * @param desired the value it gets
   * @return the status and the old value as a string
   */
  public Status.And<String> compareExchangeAndGet(String key, String expected, String desired) {
    Status.And<byte[]> r = compareExchangeAndGet(Convert.utf8(key), Convert.anyAware(expected), Convert.anyAware(desired));
    return new Status.And<>(r.status, Convert.text(r.value));
  }

  /**
   * Adds to the number of a record, as the reference does: a stored value of any length counts
   * from its first 8 bytes, big-endian, and the sum is stored as 8 bytes.
   *
   * @param key the key
   * @param inc what to add ({@code Long.MIN_VALUE}: read only)
   * @param init the starting number of an absent record
   * @param status receives the outcome, or null
   * @return the number after adding, or {@code Long.MIN_VALUE} on failure
   */
  public long increment(byte[] key, long inc, long init, Status status) {
    return Calls.reporting(this, status, () -> Native.incrementAsReference(handle(), key, inc, init),
        Long.MIN_VALUE);
  }

  /**
   * @param key the key
   * @param inc what to add
   * @param init the starting number of an absent record
   * @param status receives the outcome, or null
   * @return the number after adding
   */
  public long increment(String key, long inc, long init, Status status) {
    return increment(Convert.utf8(key), inc, init, status);
  }

  /**
   * Several compare-and-exchanges, atomically.
   *
   * @param expected keys and the values they must have (null: absent; ANY_BYTES: any)
   * @param desired keys and the values they get (null: removed)
   * @return the status; INFEASIBLE_ERROR if any expectation failed (then nothing changed)
   */
  public Status compareExchangeMulti(Map<byte[], byte[]> expected, Map<byte[], byte[]> desired) {
    byte[][][] e = Convert.split(expected);
    byte[][][] d = Convert.split(desired);
    return Calls.check(this,
        () -> Native.compareExchangeMulti(handle(), e[0], e[1], ANY_BYTES, d[0], d[1]),
        Status.INFEASIBLE_ERROR);
  }

  /**
   * Several compare-and-exchanges with strings, atomically.
   *
   * @param expected keys and the values they must have (ANY_STRING: any)
   * @param desired keys and the values they get
   * @return the status
   */
  public Status compareExchangeMultiString(Map<String, String> expected, Map<String, String> desired) {
    return compareExchangeMulti(Convert.raw(expected, true), Convert.raw(desired, false));
  }

  /**
   * @param oldKey the record's key
   * @param newKey its new key
   * @param overwrite whether to replace a record of the new key
   * @param copying whether to keep the old record
   * @return the status (NOT_FOUND_ERROR, DUPLICATION_ERROR)
   */
  public Status rekey(byte[] oldKey, byte[] newKey, boolean overwrite, boolean copying) {
    return call(h -> Native.rekey(h, oldKey, newKey, overwrite, copying));
  }

  /**
   * @param oldKey the record's key
   * @param newKey its new key
   * @param overwrite whether to replace a record of the new key
   * @param copying whether to keep the old record
   * @return the status
   */
  public Status rekey(String oldKey, String newKey, boolean overwrite, boolean copying) {
    return rekey(Convert.utf8(oldKey), Convert.utf8(newKey), overwrite, copying);
  }

  /**
   * @param status receives the outcome (NOT_FOUND_ERROR if empty), or null
   * @return the first record as {key, value}, removed, or null
   */
  public byte[][] popFirst(Status status) {
    Status.And<byte[][]> r = Calls.and(this, () -> Native.popFirst(handle()), Status.NOT_FOUND_ERROR);
    Convert.report(status, r.status);
    return r.value;
  }

  /** @return the first record, removed, or null */
  public byte[][] popFirst() {
    return popFirst(null);
  }

  /**
   * @param status receives the outcome, or null
   * @return the first record as strings, removed, or null
   */
  public String[] popFirstString(Status status) {
    byte[][] r = popFirst(status);
    return r == null ? null : new String[] {Convert.text(r[0]), Convert.text(r[1])};
  }

  /** @return the first record as strings, removed, or null */
  public String[] popFirstString() {
    return popFirstString(null);
  }

  /**
   * Adds a record whose key is the time (8 bytes big-endian).
   *
   * @param value the value
   * @param wtime the time in seconds; negative: now
   * @return the status
   */
  public Status pushLast(byte[] value, double wtime) {
    return call(h -> Native.pushLast(h, value, wtime));
  }

  /**
   * @param value the value
   * @param wtime the time in seconds; negative: now
   * @return the status
   */
  public Status pushLast(String value, double wtime) {
    return pushLast(Convert.utf8(value), wtime);
  }

  /**
   * Shows {@code processor} the record of {@code key} under its lock.
   *
   * @param key the key
   * @param processor the processor
   * @param writable whether it may change the record
   * @return the status
   */
  public Status process(byte[] key, RecordProcessor processor, boolean writable) {
    return call(h -> Native.process(h, key, Convert.bridge(processor, writable), Dbm.REMOVE, writable));
  }

  /**
   * @param key the key
   * @param processor the processor
   * @param writable whether it may change the record
   * @return the status
   */
  public Status process(String key, RecordProcessor processor, boolean writable) {
    return process(Convert.utf8(key), processor, writable);
  }

  /**
   * Shows each processor its key's record, all under their locks at once.
   *
   * @param keyProcPairs keys and their processors
   * @param writable whether they may change the records
   * @return the status
   */
  public Status processMulti(List<RecordProcessor.WithKey> keyProcPairs, boolean writable) {
    byte[][] keys = new byte[keyProcPairs.size()][];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = keyProcPairs.get(i).key;
    }
    Native.Callback callback =
        (i, k, v) -> Convert.answer(keyProcPairs.get(i).processor.process(k, v), writable);
    return call(h -> Native.processMulti(h, keys, callback, Dbm.REMOVE, writable));
  }

  /**
   * Shows each processor its key's record, as the reference's examples pass them (an array).
   *
   * @param keyProcPairs keys and their processors
   * @param writable whether they may change the records
   * @return the status
   */
  public Status processMulti(RecordProcessor.WithKey[] keyProcPairs, boolean writable) {
    return processMulti(List.of(keyProcPairs), writable);
  }

  /**
   * Shows {@code processor} every record, with null key and value before the first and after the last.
   *
   * @param processor the processor
   * @param writable whether it may change the records
   * @return the status
   */
  public Status processEach(RecordProcessor processor, boolean writable) {
    return call(h -> {
      processor.process(null, null);
      Native.processEach(h, Convert.bridge(processor, writable), Dbm.REMOVE, writable);
      processor.process(null, null);
    });
  }

  /**
   * Shows {@code processor} the first record (in key order for an ordered database).
   *
   * @param processor the processor
   * @param writable whether it may change the record
   * @return the status; NOT_FOUND_ERROR if the database is empty
   */
  public Status processFirst(RecordProcessor processor, boolean writable) {
    return Calls.check(this,
        () -> Native.processFirst(handle(), Convert.bridge(processor, writable), Dbm.REMOVE, writable),
        Status.NOT_FOUND_ERROR);
  }

  /** @return the number of records, or -1 on failure */
  public long count() {
    return Calls.reporting(this, null, () -> Native.count(handle()), -1L);
  }

  /** @return the file's size, or -1 on failure or for a database without a file */
  public long getFileSize() {
    if (open().isOpen() && noFile) {
      return -1;
    }
    return Calls.reporting(this, null, () -> Native.fileSize(handle()), -1L);
  }

  /** @return the file's path, or null (a database opened with an empty path; "" for its shard set) */
  public String getFilePath() {
    try {
      return Native.path(handle());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * The time of the database's last change reaching its file, as the file
   * system recorded it (kuradb keeps no timestamp of its own).
   *
   * @return seconds since the epoch, or NaN for a database without a file, or on failure
   */
  public double getTimestamp() {
    String path = getFilePath();
    if (path == null || path.isEmpty()) {
      return Double.NaN;
    }
    try {
      java.nio.file.attribute.FileTime time = java.nio.file.Files.getLastModifiedTime(java.nio.file.Path.of(path));
      return time.to(java.util.concurrent.TimeUnit.MICROSECONDS) / 1e6;
    } catch (java.io.IOException | RuntimeException e) {
      return Double.NaN;
    }
  }

  /** @return the status of removing every record */
  public Status clear() {
    return call(Native::clear);
  }

  /**
   * @param params tuning to change, or null
   * @return the status
   */
  public Status rebuild(Map<String, String> params) {
    String[] flat = Convert.flatten(Utility.rebuildParams(params));
    return call(h -> Native.rebuild(h, flat));
  }

  /** @return the status of rebuilding */
  public Status rebuild() {
    return rebuild(null);
  }

  /** @return whether a rebuild is worthwhile */
  public boolean shouldBeRebuilt() {
    return Calls.reporting(this, null, () -> Native.shouldBeRebuilt(handle()), false);
  }

  /**
   * @param hard whether to wait for the device
   * @param params null, or for a SkipDBM {@code merge} (paths of databases whose records it adds,
   *     separated by colons) and {@code reducer} (ReduceToFirst, ReduceToLast, …, applied to each
   *     key's records before its file is written); other classes ignore them, as the reference's do
   * @return the status; INVALID_ARGUMENT_ERROR for any other parameter
   */
  public Status synchronize(boolean hard, Map<String, String> params) {
    String[] flat = Convert.flatten(params);
    return call(h -> Native.synchronizeWith(h, hard, flat));
  }


  /**
   * @param hard whether to wait for the device
   * @return the status
   */
  public Status synchronize(boolean hard) {
    return synchronize(hard, null);
  }

  /**
   * @param destPath the copy's path
   * @param syncHard whether to make the copy durable first
   * @return the status
   */
  public Status copyFileData(String destPath, boolean syncHard) {
    if (open().isOpen() && noFile) {
      return new Status(Status.PRECONDITION_ERROR, "the database has no file: it was opened with an empty path");
    }
    return call(h -> Native.copyFileData(h, destPath, syncHard));
  }

  /**
   * @param destDBM the database to copy every record into
   * @return the status
   */
  public Status export(DBM destDBM) {
    long dest = destDBM.handle();
    try {
      return call(h -> Native.export(h, dest));
    } finally {
      Reference.reachabilityFence(destDBM);
    }
  }

  /**
   * Writes every record to a flat-record file (kuradb: a path rather than a {@code tkrzw.File}).
   *
   * @param destPath the file's path (replaced)
   * @return the status
   */
  public Status exportToFlatRecords(String destPath) {
    return call(h -> Native.exportToFile(h, destPath, false));
  }

  /**
   * Sets every record of a flat-record file.
   *
   * @param srcPath the file's path
   * @return the status
   */
  public Status importFromFlatRecords(String srcPath) {
    return call(h -> Native.importFromFile(h, srcPath));
  }

  /**
   * Writes every key as a line of text.
   *
   * @param destPath the file's path (replaced)
   * @return the status
   */
  public Status exportKeysAsLines(String destPath) {
    return call(h -> Native.exportToFile(h, destPath, true));
  }

  /**
   * Appends every record to a file as flat records.
   *
   * @param destFile the file, open for writing
   * @return the status
   */
  public Status exportToFlatRecords(File destFile) {
    return withFile(destFile, (h, f) -> Native.exportToFileObject(h, f, false));
  }

  /**
   * Sets every record of a file's flat records.
   *
   * @param srcFile the file, open
   * @return the status
   */
  public Status importFromFlatRecords(File srcFile) {
    return withFile(srcFile, (h, f) -> Native.importFromFileObject(h, f));
  }

  /**
   * Appends every key to a file as a line of text.
   *
   * @param destFile the file, open for writing
   * @return the status
   */
  public Status exportKeysAsLines(File destFile) {
    return withFile(destFile, (h, f) -> Native.exportToFileObject(h, f, true));
  }

  private interface FileOp {
    void run(long handle, long file);
  }

  private Status withFile(File file, FileOp op) {
    try {
      return Calls.status(this, () -> op.run(handle(), file.handle()));
    } finally {
      Reference.reachabilityFence(file);
    }
  }

  /** @return internal figures by name; {@code class} is the reference's class name (HashDBM, …) */
  public Map<String, String> inspect() {
    Map<String, String> figures = open().inspect();
    try {
      figures.put("class", Native.className(handle(), true));
    } finally {
      Reference.reachabilityFence(this);
    }
    return figures;
  }

  /** @return whether the database is open */
  public boolean isOpen() {
    return db != null;
  }

  /** @return whether it was opened for writing; false without a file, as the reference says */
  public boolean isWritable() {
    return !"false".equals(open().inspect().get("file_writable")) && !noFile;
  }

  /** @return whether the database is healthy */
  public boolean isHealthy() {
    return open().isHealthy();
  }

  /** @return whether iteration is in key order */
  public boolean isOrdered() {
    return open().isOrdered();
  }

  /**
   * @param mode contain, begin, end, regex, edit, editbin, upper, lower, …
   * @param pattern the pattern
   * @param capacity the most keys (0: all)
   * @return the matching keys
   * @throws StatusException for an unknown mode or a bad pattern
   */
  public byte[][] search(String mode, byte[] pattern, int capacity) {
    try {
      return Native.search(handle(), mode, pattern, capacity);
    } catch (KuraException e) {
      // A program for the reference catches its StatusException, as for an unknown mode.
      throw new StatusException(Calls.failure(e));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * @param mode the mode
   * @param pattern the pattern
   * @param capacity the most keys (0: all)
   * @return the matching keys as strings
   */
  public String[] search(String mode, String pattern, int capacity) {
    byte[][] keys = search(mode, Convert.utf8(pattern), capacity);
    String[] out = new String[keys.length];
    for (int i = 0; i < keys.length; i++) {
      out[i] = Convert.text(keys[i]);
    }
    return out;
  }

  /** @return a new iterator, not yet positioned (call {@code first()}) */
  public Iterator makeIterator() {
    try {
      return new Iterator(this, Native.cursorNew(handle()));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * @return {@code tkrzw.DBM(class=HashDBM, path=..., count=N)}, the path C-escaped, or {@code
   *     tkrzw.DBM(unopened)}, as the reference's
   */
  @Override
  public String toString() {
    Dbm d = db;
    if (d == null) {
      return "tkrzw.DBM(unopened)";
    }
    try {
      return "tkrzw.DBM(class=" + Native.className(Native.handleOf(d), true) + ", path="
          + Convert.escapeC(d.path()) + ", count=" + d.count() + ")";
    } catch (KuraException e) {
      return "tkrzw.DBM(unopened)";
    } finally {
      Reference.reachabilityFence(d);
    }
  }

  /**
   * Rebuilds a damaged database file into a new one.
   *
   * @param oldFilePath the damaged file
   * @param newFilePath the new file
   * @param className the class (HashDBM, …), or null or empty to go by the extension
   * @param endOffset a positive byte offset restores a hash database in appending mode as it
   *     was when the file ended there (the records written before it); 0 or negative restores
   *     every record it can read
   * @return the status; PRECONDITION_ERROR if a non-empty file is at the new path, as the
   *     reference answers, rather than writing over it
   */
  public static Status restoreDatabase(
      String oldFilePath, String newFilePath, String className, long endOffset) {
    Map<String, String> params = new LinkedHashMap<>();
    if (className != null && !className.isEmpty()) {
      params.put("dbm", className);
    }
    if (endOffset > 0) {
      params.put("end_offset", Long.toString(endOffset));
    }
    try {
      if (new java.io.File(newFilePath).length() > 0) {
        return new Status(Status.PRECONDITION_ERROR, "the new database is not empty");
      }
      Dbm.restore(oldFilePath, newFilePath, params);
      return new Status();
    } catch (KuraException e) {
      return Status.of(e);
    }
  }
}

package tkrzw;

import io.kuradb.KuraException;
import io.kuradb.Native;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The reference's asynchronous adapter of a {@link DBM} ({@code
 * tkrzw.AsyncDBM}), over kuradb's {@code AsyncDbm}: a pool of worker threads
 * runs each operation, which answers a {@link Future} at once. Operations
 * queued one after another may run at the same time with several workers:
 * wait for a future before queuing what depends on it. {@link #destruct()}
 * waits for every queued operation; call it before closing the database
 * (closing the {@code DBM} while its {@code AsyncDBM} lives answers
 * INFEASIBLE_ERROR). Any number of threads may queue operations at once.
 */
public class AsyncDBM {
  static {
    Native.load();
  }

  private static final Future.Decoder<Status> STATUS = (status, outcome) -> status;

  private static final Future.Decoder<Status.And<byte[]>> VALUE = (status, outcome) -> {
    if (outcome != null && outcome[0] == null) {
      return new Status.And<>(new Status(Status.NOT_FOUND_ERROR), null);
    }
    return new Status.And<>(status, outcome == null ? null : outcome[0]);
  };

  private static final Future.Decoder<Status.And<Long>> NUMBER = (status, outcome) ->
      new Status.And<>(status, outcome == null ? Long.MIN_VALUE : ByteBuffer.wrap(outcome[0]).getLong());

  private static final Future.Decoder<Status.And<byte[][]>> RECORD = (status, outcome) -> {
    if (outcome != null && outcome.length < 2) {
      return new Status.And<>(new Status(Status.NOT_FOUND_ERROR), null);
    }
    return new Status.And<>(status, outcome);
  };

  private final long handle;
  private final DBM dbm;
  private volatile boolean destructed;

  /**
   * Puts an open database behind worker threads.
   *
   * @param dbm the database, open
   * @param numWorkerThreads how many worker threads (at least 1)
   * @throws StatusException if {@code numWorkerThreads} is not positive
   * @throws IllegalArgumentException if the database is not open
   */
  public AsyncDBM(DBM dbm, int numWorkerThreads) {
    this.dbm = dbm;
    try {
      long h = Native.asyncNew(dbm.handle(), numWorkerThreads);
      Calls.CLEANER.register(this, () -> Native.asyncFree(h));
      this.handle = h;
    } catch (KuraException e) {
      throw new StatusException(Status.of(e));
    } finally {
      Reference.reachabilityFence(dbm);
    }
  }

  /** Waits for every queued operation and stops the workers; later operations fail. */
  public void destruct() {
    destructed = true;
    try {
      Native.asyncDestruct(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  private interface Queue {
    long run(long handle);
  }

  /** Queues an operation: its future, or a failed one if it could not be queued. */
  private <T> Future<T> queue(Queue op, Future.Decoder<T> decoder) {
    try {
      return new Future<>(op.run(handle), decoder);
    } catch (KuraException | Calls.NotOpen | IllegalArgumentException e) {
      return new Future<>(Calls.failure(e), decoder);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** A decoder of a yes-or-no outcome: {@code whenNo} where it is no. */
  private static Future.Decoder<Status> flag(Status.Code whenNo) {
    return (status, outcome) -> outcome != null && outcome[0] == null ? new Status(whenNo) : status;
  }

  /** The string form of a byte decoder's answer. */
  private static Future.Decoder<Status.And<String>> text(Future.Decoder<Status.And<byte[]>> raw) {
    return (status, outcome) -> {
      Status.And<byte[]> r = raw.decode(status, outcome);
      return new Status.And<>(r.status, Convert.text(r.value));
    };
  }

  /**
   * @param key the key
   * @return the status (NOT_FOUND_ERROR if absent) and the value
   */
  public Future<Status.And<byte[]>> get(byte[] key) {
    return queue(h -> Native.asyncGet(h, key), VALUE);
  }

  /**
   * @param key the key
   * @return the status and the value as a string
   */
  public Future<Status.And<String>> get(String key) {
    return queue(h -> Native.asyncGet(h, Convert.utf8(key)), text(VALUE));
  }

  /**
   * @param keys the keys
   * @return the status and the records found (absent keys left out)
   */
  public Future<Status.And<Map<byte[], byte[]>>> getMulti(byte[][] keys) {
    return queue(h -> Native.asyncGetMulti(h, keys), (status, outcome) -> {
      Map<byte[], byte[]> found = new LinkedHashMap<>();
      for (int i = 0; outcome != null && i < keys.length; i++) {
        if (outcome[i] != null) {
          found.put(keys[i], outcome[i]);
        }
      }
      return new Status.And<>(status, found);
    });
  }

  /**
   * @param keys the keys
   * @return the status and the records found, as strings
   */
  public Future<Status.And<Map<String, String>>> getMulti(String[] keys) {
    return queue(h -> Native.asyncGetMulti(h, Convert.utf8s(keys)), (status, outcome) -> {
      Map<String, String> found = new LinkedHashMap<>();
      for (int i = 0; outcome != null && i < keys.length; i++) {
        if (outcome[i] != null) {
          found.put(keys[i], Convert.text(outcome[i]));
        }
      }
      return new Status.And<>(status, found);
    });
  }

  /**
   * @param key the key
   * @param value the value
   * @param overwrite whether to replace an existing value
   * @return the status; DUPLICATION_ERROR if the key exists and {@code overwrite} is false
   */
  public Future<Status> set(byte[] key, byte[] value, boolean overwrite) {
    return queue(h -> Native.asyncSet(h, key, value, overwrite), STATUS);
  }

  /**
   * @param key the key
   * @param value the value
   * @return the status
   */
  public Future<Status> set(byte[] key, byte[] value) {
    return set(key, value, true);
  }

  /**
   * @param key the key
   * @param value the value
   * @param overwrite whether to replace an existing value
   * @return the status
   */
  public Future<Status> set(String key, String value, boolean overwrite) {
    return set(Convert.utf8(key), Convert.utf8(value), overwrite);
  }

  /**
   * @param key the key
   * @param value the value
   * @return the status
   */
  public Future<Status> set(String key, String value) {
    return set(key, value, true);
  }

  /**
   * Stores the records atomically.
   *
   * @param records the records
   * @param overwrite whether to replace existing values
   * @return the status; DUPLICATION_ERROR if a key exists and {@code overwrite} is false (as the
   *     reference: the records that exist stay, the others are stored)
   */
  public Future<Status> setMulti(Map<byte[], byte[]> records, boolean overwrite) {
    byte[][][] r = Convert.split(records);
    if (!overwrite) {
      return queue(h -> Native.asyncSetAbsentMulti(h, r[0], r[1]), flag(Status.DUPLICATION_ERROR));
    }
    return queue(h -> Native.asyncSetMulti(h, r[0], r[1], true), STATUS);
  }

  /**
   * @param records the records, as strings
   * @param overwrite whether to replace existing values
   * @return the status
   */
  public Future<Status> setMultiStr(Map<String, String> records, boolean overwrite) {
    return setMulti(Convert.raw(records, false), overwrite);
  }

  /**
   * The same as {@link #setMultiStr}, by the name the current reference gives it.
   *
   * @param records the records, as strings
   * @param overwrite whether to replace existing values
   * @return the status
   */
  public Future<Status> setMultiString(Map<String, String> records, boolean overwrite) {
    return setMultiStr(records, overwrite);
  }

  /**
   * @param key the key
   * @return the status; NOT_FOUND_ERROR if absent
   */
  public Future<Status> remove(byte[] key) {
    return queue(h -> Native.asyncRemove(h, key), flag(Status.NOT_FOUND_ERROR));
  }

  /**
   * @param key the key
   * @return the status
   */
  public Future<Status> remove(String key) {
    return remove(Convert.utf8(key));
  }

  /**
   * Removes every key atomically.
   *
   * @param keys the keys
   * @return the status; NOT_FOUND_ERROR if any was absent (the others are removed)
   */
  public Future<Status> removeMulti(byte[][] keys) {
    return queue(h -> Native.asyncRemoveMulti(h, keys), (status, outcome) -> {
      if (outcome != null && ByteBuffer.wrap(outcome[0]).getLong() < keys.length) {
        return new Status(Status.NOT_FOUND_ERROR);
      }
      return status;
    });
  }

  /**
   * @param keys the keys
   * @return the status
   */
  public Future<Status> removeMulti(String[] keys) {
    return removeMulti(Convert.utf8s(keys));
  }

  /**
   * @param key the key
   * @param value what to append
   * @param delim what goes between an existing value and it
   * @return the status
   */
  public Future<Status> append(byte[] key, byte[] value, byte[] delim) {
    return queue(h -> Native.asyncAppend(h, key, value, delim), STATUS);
  }

  /**
   * @param key the key
   * @param value what to append
   * @param delim what goes between an existing value and it
   * @return the status
   */
  public Future<Status> append(String key, String value, String delim) {
    return append(Convert.utf8(key), Convert.utf8(value), Convert.utf8(delim));
  }

  /**
   * Appends to every record atomically.
   *
   * @param records the keys and what to append
   * @param delim what goes between an existing value and it
   * @return the status
   */
  public Future<Status> appendMulti(Map<byte[], byte[]> records, byte[] delim) {
    byte[][][] r = Convert.split(records);
    return queue(h -> Native.asyncAppendMulti(h, r[0], r[1], delim), STATUS);
  }

  /**
   * @param records the keys and what to append, as strings
   * @param delim what goes between an existing value and it
   * @return the status
   */
  public Future<Status> appendMulti(Map<String, String> records, String delim) {
    return appendMulti(Convert.raw(records, false), Convert.utf8(delim));
  }

  /**
   * @param key the key
   * @param expected the value it must have; null: absent
   * @param desired the value it gets; null: removed
   * @return the status; INFEASIBLE_ERROR if it did not match
   */
  public Future<Status> compareExchange(byte[] key, byte[] expected, byte[] desired) {
    return queue(h -> Native.asyncCompareExchange(h, key, expected, desired),
        flag(Status.INFEASIBLE_ERROR));
  }

  /**
   * @param key the key
   * @param expected the value it must have; null: absent
   * @param desired the value it gets; null: removed
   * @return the status
   */
  public Future<Status> compareExchange(String key, String expected, String desired) {
    return compareExchange(Convert.utf8(key), Convert.utf8(expected), Convert.utf8(desired));
  }

  /**
   * Adds to the number of a record, as the reference does: a stored value of any length counts
   * from its first 8 bytes, big-endian, and the sum is stored as 8 bytes.
   *
   * @param key the key
   * @param inc what to add ({@code Long.MIN_VALUE}: read only)
   * @param init the starting number of an absent record
   * @return the status and the number after adding
   */
  public Future<Status.And<Long>> increment(byte[] key, long inc, long init) {
    return queue(h -> Native.asyncIncrementAsReference(h, key, inc, init), NUMBER);
  }

  /**
   * @param key the key
   * @param inc what to add
   * @param init the starting number of an absent record
   * @return the status and the number after adding
   */
  public Future<Status.And<Long>> increment(String key, long inc, long init) {
    return increment(Convert.utf8(key), inc, init);
  }

  /**
   * Several compare-and-exchanges, atomically.
   *
   * @param expected keys and the values they must have (null: absent)
   * @param desired keys and the values they get (null: removed)
   * @return the status; INFEASIBLE_ERROR (nothing changed) if any expectation failed
   */
  public Future<Status> compareExchangeMulti(Map<byte[], byte[]> expected, Map<byte[], byte[]> desired) {
    byte[][][] e = Convert.split(expected);
    byte[][][] d = Convert.split(desired);
    return queue(h -> Native.asyncCompareExchangeMulti(h, e[0], e[1], d[0], d[1]),
        flag(Status.INFEASIBLE_ERROR));
  }

  /**
   * @param expected keys and the values they must have, as strings
   * @param desired keys and the values they get, as strings
   * @return the status
   */
  public Future<Status> compareExchangeMultiStr(Map<String, String> expected, Map<String, String> desired) {
    return compareExchangeMulti(Convert.raw(expected, false), Convert.raw(desired, false));
  }

  /**
   * The same as {@link #compareExchangeMultiStr}, by the name the current reference gives it.
   *
   * @param expected keys and the values they must have, as strings
   * @param desired keys and the values they get, as strings
   * @return the status
   */
  public Future<Status> compareExchangeMultiString(
      Map<String, String> expected, Map<String, String> desired) {
    return compareExchangeMultiStr(expected, desired);
  }

  /**
   * Moves the record of {@code oldKey} to {@code newKey} atomically.
   *
   * @param oldKey the key of the record
   * @param newKey its new key
   * @param overwrite whether to replace a record of {@code newKey}
   * @param copying whether to keep the record of {@code oldKey}
   * @return the status; NOT_FOUND_ERROR if {@code oldKey} is absent, DUPLICATION_ERROR if
   *     {@code newKey} exists and {@code overwrite} is false
   */
  public Future<Status> rekey(byte[] oldKey, byte[] newKey, boolean overwrite, boolean copying) {
    return queue(h -> Native.asyncRekey(h, oldKey, newKey, overwrite, copying), STATUS);
  }

  /**
   * @param oldKey the key of the record, as UTF-8
   * @param newKey its new key, as UTF-8
   * @param overwrite whether to replace a record of {@code newKey}
   * @param copying whether to keep the record of {@code oldKey}
   * @return the status
   */
  public Future<Status> rekey(String oldKey, String newKey, boolean overwrite, boolean copying) {
    return rekey(Convert.utf8(oldKey), Convert.utf8(newKey), overwrite, copying);
  }

  /** @return the status (NOT_FOUND_ERROR if there is none) and the first record, removed */
  public Future<Status.And<byte[][]>> popFirst() {
    return queue(Native::asyncPopFirst, RECORD);
  }

  /** @return the status and the first record as UTF-8 strings, removed */
  public Future<Status.And<String[]>> popFirstString() {
    return queue(Native::asyncPopFirst, (status, outcome) -> {
      Status.And<byte[][]> r = RECORD.decode(status, outcome);
      String[] texts = r.value == null ? null : new String[] {Convert.text(r.value[0]), Convert.text(r.value[1])};
      return new Status.And<>(r.status, texts);
    });
  }

  /**
   * Adds a record whose key is the time (8 bytes big-endian).
   *
   * @param value the value
   * @param wtime the time in seconds; negative: now
   * @return the status
   */
  public Future<Status> pushLast(byte[] value, double wtime) {
    return queue(h -> Native.asyncPushLast(h, value, wtime), STATUS);
  }

  /**
   * @param value the value, as UTF-8
   * @param wtime the time in seconds; negative: now
   * @return the status
   */
  public Future<Status> pushLast(String value, double wtime) {
    return pushLast(Convert.utf8(value), wtime);
  }

  /** @return the status of removing every record */
  public Future<Status> clear() {
    return queue(Native::asyncClear, STATUS);
  }

  /**
   * @param params tuning to change, or null
   * @return the status
   */
  public Future<Status> rebuild(Map<String, String> params) {
    String[] flat = Convert.flatten(Utility.rebuildParams(params));
    return queue(h -> Native.asyncRebuild(h, flat), STATUS);
  }

  /** @return the status of rebuilding */
  public Future<Status> rebuild() {
    return rebuild(null);
  }

  /**
   * @param hard whether to wait for the device
   * @param params as {@link DBM#synchronize(boolean, Map)} takes them, or null
   * @return the status
   */
  public Future<Status> synchronize(boolean hard, Map<String, String> params) {
    String[] flat = Convert.flatten(params);
    return queue(h -> Native.asyncSynchronize(h, hard, flat), STATUS);
  }

  /**
   * @param hard whether to wait for the device
   * @return the status
   */
  public Future<Status> synchronize(boolean hard) {
    return synchronize(hard, null);
  }

  /**
   * @param destPath the copy's path
   * @param syncHard whether to make the copy durable
   * @return the status
   */
  public Future<Status> copyFileData(String destPath, boolean syncHard) {
    return queue(h -> Native.asyncCopyFileData(h, destPath, syncHard), STATUS);
  }

  /**
   * @param destPath the copy's path
   * @return the status
   */
  public Future<Status> copyFileData(String destPath) {
    return copyFileData(destPath, false);
  }

  /**
   * @param destDBM the database to copy every record into, open until the future is done
   * @return the status
   */
  public Future<Status> export(DBM destDBM) {
    try {
      return queue(h -> Native.asyncExport(h, destDBM.handle()), STATUS);
    } finally {
      Reference.reachabilityFence(destDBM);
    }
  }

  /**
   * @param destFile the file to append every record to as flat records, open until the future is done
   * @return the status
   */
  public Future<Status> exportToFlatRecords(File destFile) {
    try {
      return queue(h -> Native.asyncExportToFile(h, destFile.handle()), STATUS);
    } finally {
      Reference.reachabilityFence(destFile);
    }
  }

  /**
   * @param srcFile the file of flat records to set, open until the future is done
   * @return the status
   */
  public Future<Status> importFromFlatRecords(File srcFile) {
    try {
      return queue(h -> Native.asyncImportFromFile(h, srcFile.handle()), STATUS);
    } finally {
      Reference.reachabilityFence(srcFile);
    }
  }

  /**
   * @param mode contain, begin, end, regex, edit, editbin, …
   * @param pattern the pattern
   * @param capacity the most keys (0: all)
   * @return the status and the matching keys
   */
  public Future<Status.And<byte[][]>> search(String mode, byte[] pattern, int capacity) {
    return queue(h -> Native.asyncSearch(h, mode, pattern, capacity),
        (status, outcome) -> new Status.And<>(status, outcome == null ? new byte[0][] : outcome));
  }

  /**
   * @param mode the mode
   * @param pattern the pattern, as UTF-8
   * @param capacity the most keys (0: all)
   * @return the status and the matching keys as strings
   */
  public Future<Status.And<String[]>> search(String mode, String pattern, int capacity) {
    return queue(h -> Native.asyncSearch(h, mode, Convert.utf8(pattern), capacity),
        (status, outcome) -> new Status.And<>(status, outcome == null ? new String[0] : Convert.texts(outcome)));
  }

  /** @return {@code tkrzw.AsyncDBM(...the database...)} */
  @Override
  public String toString() {
    return "tkrzw.AsyncDBM(" + (destructed ? "destructed" : dbm.toString()) + ")";
  }
}

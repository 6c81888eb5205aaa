package io.kuradb;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A kuradb database of any class (hash, tree, skip, tiny, baby, cache, …),
 * chosen by the path's extension or the {@code dbm} parameter when it is
 * opened.
 *
 * <pre>{@code
 * try (Dbm db = Dbm.open("casket.kh", true, Map.of("num_buckets", "1000"))) {
 *   db.set("hello", "world");
 *   System.out.println(db.getString("hello"));
 * }
 * }</pre>
 *
 * <p>Keys and values are byte strings; the {@code String} overloads encode
 * with UTF-8. A missing record is not an error: {@code get} answers null.
 * Errors throw {@link KuraException} with the error's kind.
 *
 * <p>Thread safety: every method may be called from any number of threads at
 * once, {@code close} included (operations in flight finish first; later ones
 * throw). A {@link Processor} runs under the record's lock and must not use
 * the same database (that throws rather than deadlocks). Cursors are for one
 * thread at a time each.
 */
public final class Dbm implements AutoCloseable {
  /** What a {@link Processor} answers to remove the record (compared by identity). */
  public static final byte[] REMOVE = new byte[0];

  /** What a {@link Processor} answers to leave the record as it is. */
  public static final byte[] KEEP = null;

  private static final Cleaner CLEANER = Cleaner.create();

  /** A function shown a record under its lock, deciding what becomes of it. */
  @FunctionalInterface
  public interface Processor {
    /**
     * Decides what to do with a record.
     *
     * @param key the record's key
     * @param value its value, or null if it is absent
     * @return {@link #KEEP} (null), {@link #REMOVE}, or the new value
     */
    byte[] process(byte[] key, byte[] value);
  }

  /** The native handle; the Cleaner frees it once this object is unreachable. */
  final long handle;

  private Dbm(long handle) {
    this.handle = handle;
    CLEANER.register(this, () -> Native.free(handle));
  }

  /**
   * Opens (or creates) a database.
   *
   * @param path the file's path; its extension chooses the class unless {@code dbm} is given
   * @param writable whether to open it for writing
   * @param params the parameters PolyDbm takes ({@code dbm}, {@code truncate},
   *     {@code num_buckets}, {@code file}, …: docs/java.md), or null
   * @return the open database
   * @throws KuraException if it cannot be opened
   */
  public static Dbm open(String path, boolean writable, Map<String, String> params) {
    Objects.requireNonNull(path, "path");
    return new Dbm(Native.open(path, writable, flatten(params)));
  }

  /**
   * Opens a database with no parameters.
   *
   * @param path the file's path
   * @param writable whether to open it for writing
   * @return the open database
   */
  public static Dbm open(String path, boolean writable) {
    return open(path, writable, null);
  }

  static String[] flatten(Map<String, String> params) {
    if (params == null) {
      return null;
    }
    String[] flat = new String[params.size() * 2];
    int i = 0;
    for (Map.Entry<String, String> e : params.entrySet()) {
      flat[i++] = Objects.requireNonNull(e.getKey(), "a parameter's name");
      flat[i++] = Objects.requireNonNull(e.getValue(), "a parameter's value");
    }
    return flat;
  }

  static byte[] utf8(String s) {
    return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
  }

  static String text(byte[] b) {
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }

  /**
   * Writes everything back and closes the database; a second call does nothing.
   *
   * @throws KuraException if closing found an error
   */
  @Override
  public void close() {
    try {
      Native.close(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return whether the database is open */
  public boolean isOpen() {
    try {
      return Native.isOpen(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * @param key the key
   * @return its value, or null if it has no record
   */
  public byte[] get(byte[] key) {
    try {
      return Native.get(handle, key);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * @param key the key, UTF-8 encoded
   * @return its value decoded as UTF-8, or null
   */
  public String getString(String key) {
    return text(get(utf8(Objects.requireNonNull(key, "key"))));
  }

  /**
   * @param key the key
   * @return whether it has a record
   */
  public boolean contains(byte[] key) {
    try {
      return Native.contains(handle, key);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * @param key the key
   * @return whether it has a record
   */
  public boolean contains(String key) {
    return contains(utf8(Objects.requireNonNull(key, "key")));
  }

  /**
   * Stores a record, replacing any value.
   *
   * @param key the key
   * @param value the value
   */
  public void set(byte[] key, byte[] value) {
    set(key, value, true);
  }

  /**
   * Stores a record.
   *
   * @param key the key
   * @param value the value
   * @param overwrite whether to replace an existing value
   * @return false if the key existed and {@code overwrite} was false (nothing changed)
   */
  public boolean set(byte[] key, byte[] value, boolean overwrite) {
    try {
      return Native.set(handle, key, value, overwrite);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Stores a record of strings, replacing any value.
   *
   * @param key the key
   * @param value the value
   */
  public void set(String key, String value) {
    set(utf8(Objects.requireNonNull(key, "key")), utf8(Objects.requireNonNull(value, "value")), true);
  }

  /**
   * Stores a record that expires {@code ttl} from now (a database with expiry: opened
   * with {@code expiry=true} when it was made). A plain {@link #set(byte[], byte[])}
   * stores one that never expires.
   *
   * @param key the key
   * @param value the value
   * @param ttl the time to live, zero or more (zero: expired at once)
   * @throws KuraException of kind INVALID_ARGUMENT for a negative ttl, INFEASIBLE for a
   *     database without expiry
   */
  public void set(byte[] key, byte[] value, Duration ttl) {
    set(key, value, true, ttl);
  }

  /**
   * Stores a record that expires {@code ttl} from now.
   *
   * @param key the key
   * @param value the value
   * @param overwrite whether to replace an existing value
   * @param ttl the time to live
   * @return false if the key existed and {@code overwrite} was false (nothing changed)
   */
  public boolean set(byte[] key, byte[] value, boolean overwrite, Duration ttl) {
    try {
      return Native.setWithTtl(handle, key, value, overwrite, millis(ttl));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Stores a record of strings that expires {@code ttl} from now.
   *
   * @param key the key
   * @param value the value
   * @param ttl the time to live
   */
  public void set(String key, String value, Duration ttl) {
    set(utf8(key), utf8(value), ttl);
  }

  private static long millis(Duration ttl) {
    Objects.requireNonNull(ttl, "ttl");
    if (ttl.isNegative()) {
      throw new KuraException(KuraException.Kind.INVALID_ARGUMENT, "the time to live " + ttl + " is negative");
    }
    try {
      // Rounded up: a positive time to live never expires the record at once.
      return ttl.plusNanos(999_999).toMillis();
    } catch (ArithmeticException e) {
      throw new KuraException(KuraException.Kind.INVALID_ARGUMENT, "the time to live " + ttl + " is too large");
    }
  }

  /**
   * Makes a record expire {@code ttl} from now (zero: at once).
   *
   * @param key the key
   * @param ttl the time to live
   * @return whether it had a record
   */
  public boolean expire(byte[] key, Duration ttl) {
    try {
      return Native.expire(handle, key, millis(ttl));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Makes a record expire at {@code at} (a time past removes it).
   *
   * @param key the key
   * @param at the expiry time
   * @return whether it had a record
   */
  public boolean expireAt(byte[] key, Instant at) {
    long millis;
    try {
      millis = at.toEpochMilli();
    } catch (ArithmeticException e) {
      throw new KuraException(KuraException.Kind.INVALID_ARGUMENT, "the expiry time " + at + " is out of range");
    }
    try {
      return Native.expireAt(handle, key, millis);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Makes a record never expire.
   *
   * @param key the key
   * @return whether it had an expiry time
   */
  public boolean persist(byte[] key) {
    try {
      return Native.persist(handle, key);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * The time a record has left.
   *
   * @param key the key
   * @return the time left, or empty if the record never expires; null if there is no
   *     record (or it has expired), as {@link #get(byte[])} answers
   */
  public Optional<Duration> ttl(byte[] key) {
    try {
      long at = Native.expiryMillis(handle, key);
      if (at == -2) {
        return null;
      }
      if (at == -1) {
        return Optional.empty();
      }
      return Optional.of(Duration.ofMillis(Math.max(0, at - Native.nowMillis(handle))));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * The time a record expires.
   *
   * @param key the key
   * @return the expiry time, or empty if the record never expires; null if there is no
   *     record
   */
  public Optional<Instant> expiry(byte[] key) {
    try {
      long at = Native.expiryMillis(handle, key);
      if (at == -2) {
        return null;
      }
      return at == -1 ? Optional.empty() : Optional.of(Instant.ofEpochMilli(at));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return whether the database has expiry (it was made with {@code expiry=true}) */
  public boolean hasExpiry() {
    try {
      return Native.hasExpiry(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Removes expired records, looking at {@code maxRecords} records at most from where the
   * last sweep stopped. Reads hide expired records before they are removed.
   *
   * @param maxRecords how many records to look at, above 0
   * @return {visited, removed, 1 if the walk reached the end of the database else 0}
   */
  public long[] sweep(long maxRecords) {
    try {
      return Native.sweep(handle, maxRecords);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Starts a background thread removing expired records, looking at
   * {@code recordsPerSecond} records a second at most; {@link #stopSweeper()} or
   * {@link #close()} stops it.
   *
   * @param recordsPerSecond the budget, above 0
   */
  public void startSweeper(long recordsPerSecond) {
    try {
      Native.startSweeper(handle, recordsPerSecond);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Stops the background sweeper.
   *
   * @return how many records it removed, or -1 if none was running
   */
  public long stopSweeper() {
    try {
      return Native.stopSweeper(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * @param key the key
   * @return whether it had a record (now removed)
   */
  public boolean remove(byte[] key) {
    try {
      return Native.remove(handle, key);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * @param key the key
   * @return whether it had a record (now removed)
   */
  public boolean remove(String key) {
    return remove(utf8(Objects.requireNonNull(key, "key")));
  }

  /**
   * Appends to a record's value, with {@code delimiter} between an existing value and the new part.
   *
   * @param key the key
   * @param value what to append
   * @param delimiter what to put between (null: nothing)
   */
  public void append(byte[] key, byte[] value, byte[] delimiter) {
    try {
      Native.append(handle, key, value, delimiter);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Appends to a record's value.
   *
   * @param key the key
   * @param value what to append
   * @param delimiter what to put between (null: nothing)
   */
  public void append(String key, String value, String delimiter) {
    append(utf8(Objects.requireNonNull(key, "key")), utf8(Objects.requireNonNull(value, "value")), utf8(delimiter));
  }

  /**
   * Adds to a number stored as 8 bytes big-endian (as the reference stores it).
   *
   * @param key the key
   * @param delta what to add ({@code Long.MIN_VALUE}: read without changing)
   * @param initial the number an absent record starts from
   * @return the number after adding
   */
  public long increment(byte[] key, long delta, long initial) {
    try {
      return Native.increment(handle, key, delta, initial);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Adds to a number stored under a string key.
   *
   * @param key the key
   * @param delta what to add
   * @param initial the number an absent record starts from
   * @return the number after adding
   */
  public long increment(String key, long delta, long initial) {
    return increment(utf8(Objects.requireNonNull(key, "key")), delta, initial);
  }

  /**
   * Replaces the value with {@code desired} if it is {@code expected} now, atomically.
   *
   * @param key the key
   * @param expected the value it must have (null: the record must be absent)
   * @param desired the value it gets (null: the record is removed)
   * @return whether it matched (and so changed)
   */
  public boolean compareExchange(byte[] key, byte[] expected, byte[] desired) {
    try {
      return Native.compareExchange(handle, key, expected, false, desired, false)[1] != null;
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Compare-and-exchange with strings.
   *
   * @param key the key
   * @param expected the value it must have (null: absent)
   * @param desired the value it gets (null: removed)
   * @return whether it matched
   */
  public boolean compareExchange(String key, String expected, String desired) {
    return compareExchange(utf8(Objects.requireNonNull(key, "key")), utf8(expected), utf8(desired));
  }

  /**
   * The values of several keys, read atomically together.
   *
   * @param keys the keys
   * @return a map (in the keys' order) of the keys that have records to their values
   */
  public Map<byte[], byte[]> getMulti(List<byte[]> keys) {
    byte[][] array = keys.toArray(new byte[0][]);
    byte[][] values;
    try {
      values = Native.getMulti(handle, array);
    } finally {
      Reference.reachabilityFence(this);
    }
    Map<byte[], byte[]> found = new LinkedHashMap<>();
    for (int i = 0; i < array.length; i++) {
      if (values[i] != null) {
        found.put(array[i], values[i]);
      }
    }
    return found;
  }

  /**
   * The values of several string keys, read atomically together.
   *
   * @param keys the keys
   * @return a map (in the keys' order) of the keys that have records to their values
   */
  public Map<String, String> getMultiString(List<String> keys) {
    byte[][] array = new byte[keys.size()][];
    for (int i = 0; i < array.length; i++) {
      array[i] = utf8(Objects.requireNonNull(keys.get(i), "a key"));
    }
    byte[][] values;
    try {
      values = Native.getMulti(handle, array);
    } finally {
      Reference.reachabilityFence(this);
    }
    Map<String, String> found = new LinkedHashMap<>();
    for (int i = 0; i < array.length; i++) {
      if (values[i] != null) {
        found.put(keys.get(i), text(values[i]));
      }
    }
    return found;
  }

  /**
   * Stores every record atomically.
   *
   * @param records the records
   * @param overwrite whether to replace existing values
   * @return false if a key existed and {@code overwrite} was false (then nothing changed)
   */
  public boolean setMulti(Map<byte[], byte[]> records, boolean overwrite) {
    byte[][] keys = new byte[records.size()][];
    byte[][] values = new byte[records.size()][];
    int i = 0;
    for (Map.Entry<byte[], byte[]> e : records.entrySet()) {
      keys[i] = e.getKey();
      values[i++] = e.getValue();
    }
    try {
      return Native.setMulti(handle, keys, values, overwrite);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Stores every string record atomically, replacing existing values.
   *
   * @param records the records
   */
  public void setMultiString(Map<String, String> records) {
    Map<byte[], byte[]> raw = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : records.entrySet()) {
      raw.put(utf8(Objects.requireNonNull(e.getKey(), "a key")), utf8(Objects.requireNonNull(e.getValue(), "a value")));
    }
    setMulti(raw, true);
  }

  /**
   * Removes several keys atomically.
   *
   * @param keys the keys
   * @return how many had records
   */
  public int removeMulti(List<byte[]> keys) {
    try {
      return Native.removeMulti(handle, keys.toArray(new byte[0][]));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Shows {@code processor} the record of {@code key} under its lock and
   * carries out its answer.
   *
   * @param key the key
   * @param processor the function
   * @param writable false if the processor only reads (then it must answer {@link #KEEP})
   * @throws RuntimeException whatever the processor threw, after the record was left as it was
   */
  public void process(byte[] key, Processor processor, boolean writable) {
    Objects.requireNonNull(processor, "processor");
    try {
      Native.process(handle, key, (i, k, v) -> processor.process(k, v), REMOVE, writable);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Shows {@code processor} every record in turn (the database's order) and carries out each answer.
   *
   * @param processor the function
   * @param writable false if the processor only reads
   */
  public void processEach(Processor processor, boolean writable) {
    Objects.requireNonNull(processor, "processor");
    try {
      Native.processEach(handle, (i, k, v) -> processor.process(k, v), REMOVE, writable);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the number of records */
  public long count() {
    try {
      return Native.count(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the size of the file (memory use for on-memory classes) */
  public long fileSize() {
    try {
      return Native.fileSize(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the file's path, or null for a database without one */
  public String path() {
    try {
      return Native.path(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the class's short name: hash, tree, skip, tiny, baby, cache, stdhash, stdtree */
  public String className() {
    try {
      return Native.className(handle, false);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Removes every record. */
  public void clear() {
    try {
      Native.clear(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Rewrites the database compactly. */
  public void rebuild() {
    rebuild(null);
  }

  /**
   * Rewrites the database compactly with changed tuning.
   *
   * @param params the tuning to change (for example {@code num_buckets}), or null
   */
  public void rebuild(Map<String, String> params) {
    try {
      Native.rebuild(handle, flatten(params));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return whether fragmentation or load make a rebuild worthwhile */
  public boolean shouldBeRebuilt() {
    try {
      return Native.shouldBeRebuilt(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Makes every change so far reach the OS, or with {@code hard} the device.
   *
   * @param hard whether to wait for the device
   */
  public void synchronize(boolean hard) {
    try {
      Native.synchronize(handle, hard);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Writes a consistent copy of the database's file while it stays open.
   *
   * @param dest the copy's path
   * @param hard whether to make the copy durable before returning
   */
  public void copyFileData(String dest, boolean hard) {
    try {
      Native.copyFileData(handle, dest, hard);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return internal figures by name, in the core's order */
  public Map<String, String> inspect() {
    String[] flat;
    try {
      flat = Native.inspect(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
    Map<String, String> map = new LinkedHashMap<>();
    for (int i = 0; i + 1 < flat.length; i += 2) {
      map.put(flat[i], flat[i + 1]);
    }
    return map;
  }

  /** @return whether the database is consistent */
  public boolean isHealthy() {
    try {
      return Native.isHealthy(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return whether iteration visits keys in order */
  public boolean isOrdered() {
    try {
      return Native.isOrdered(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Keys that match a pattern.
   *
   * @param mode contain, begin, end, regex, edit, editbin, upper, lower, … (the reference's modes)
   * @param pattern the pattern
   * @param capacity the most keys to answer (0: all)
   * @return the keys
   */
  public List<byte[]> search(String mode, byte[] pattern, int capacity) {
    try {
      return List.of(Native.search(handle, mode, pattern, capacity));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * A new cursor, positioned at the first record. Close it (try-with-resources) when done.
   *
   * @return the cursor
   */
  public Cursor cursor() {
    Cursor cursor;
    try {
      cursor = new Cursor(this, Native.cursorNew(handle));
    } finally {
      Reference.reachabilityFence(this);
    }
    cursor.first();
    return cursor;
  }

  /**
   * Every record's key and value, in the database's order, as a list (use {@link #cursor()} for large ones).
   *
   * @return the records
   */
  public List<Map.Entry<byte[], byte[]>> records() {
    List<Map.Entry<byte[], byte[]>> all = new ArrayList<>();
    try (Cursor c = cursor()) {
      for (Map.Entry<byte[], byte[]> e : c) {
        all.add(e);
      }
    }
    return all;
  }

  /**
   * Starts a serializable transaction; commit it with {@link Transaction#commit}, and close it
   * (try-with-resources), which aborts it unless it was committed.
   *
   * @param durability how durable the commit is when it returns
   * @return the transaction
   */
  public Transaction begin(Durability durability) {
    Objects.requireNonNull(durability, "durability");
    try {
      return new Transaction(this, Native.txBegin(handle, durability.ordinal()), durability);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Starts a batch of blind writes applied as one unit by {@link Batch#commit}; closing it
   * discards them unless they were committed.
   *
   * @param durability how durable the commit is when it returns
   * @return the batch
   */
  public Batch batch(Durability durability) {
    Objects.requireNonNull(durability, "durability");
    return new Batch(this, durability);
  }

  /**
   * A read view of the database at its newest commit; close it (try-with-resources) to release
   * it.
   *
   * @return the snapshot
   */
  public Snapshot snapshot() {
    try {
      return new Snapshot(this, Native.snapshotOpen(handle));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Runs {@code body} in a new transaction and commits it (unless {@code body} finished it),
   * answering what {@code body} answered. When the commit (or a read) throws a {@link
   * KuraException} of kind {@link KuraException.Kind#CONFLICT}, waits a short random time and
   * runs {@code body} again in a new transaction, at most {@code retries} more times; then the
   * conflict is thrown. Any other exception aborts the transaction and is thrown at once.
   *
   * @param durability how durable each commit is when it returns
   * @param retries how many times to run {@code body} again after a conflict (0 or more)
   * @param body the work
   * @param <T> what the work answers
   * @return what {@code body} answered in the run that committed
   */
  public <T> T run(Durability durability, int retries, TransactionBody<T> body) {
    Objects.requireNonNull(body, "body");
    if (retries < 0) {
      throw new IllegalArgumentException("retries must be 0 or more, not " + retries);
    }
    for (int attempt = 0; ; attempt++) {
      try (Transaction tx = begin(durability)) {
        T result = body.run(tx);
        if (tx.isActive()) {
          tx.commit();
        }
        return result;
      } catch (KuraException e) {
        if (e.kind() != KuraException.Kind.CONFLICT || attempt >= retries) {
          throw e;
        }
      }
      // Back off a little, more after each conflict, so that contenders
      // spread out instead of meeting again.
      long bound = 500_000L << Math.min(attempt + 1, 8);
      long nanos = java.util.concurrent.ThreadLocalRandom.current().nextLong(bound);
      java.util.concurrent.locks.LockSupport.parkNanos(nanos);
    }
  }

  /**
   * Rebuilds a damaged database file into a new one.
   *
   * @param src the damaged file
   * @param dest the new file (must not exist)
   * @param params parameters (for example {@code dbm} for the class), or null
   * @return how many records were saved
   */
  public static long restore(String src, String dest, Map<String, String> params) {
    return Native.restore(src, dest, flatten(params));
  }

  @Override
  public String toString() {
    if (!isOpen()) {
      return "Dbm(closed)";
    }
    return "Dbm(" + className() + ", " + path() + ", " + count() + " records)";
  }
}

package io.kuradb;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;

/**
 * Blind writes of a {@link Dbm}, from {@link Dbm#batch}, applied as one unit
 * by {@link #commit}: no reader sees a part of them, and a crash leaves them
 * whole or absent. A batch reads nothing, so its commit never conflicts.
 *
 * <pre>{@code
 * try (Batch b = db.batch(Durability.SYNC)) {
 *   b.set("alice", "100");
 *   b.increment("accounts".getBytes(), 1, 0);
 *   b.commit();
 * }
 * }</pre>
 *
 * <p>{@link #close} discards the writes unless they were committed. After a
 * commit or a discard, adding a write throws a {@link KuraException} of kind
 * {@link KuraException.Kind#INFEASIBLE}.
 */
public final class Batch implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  private final long handle;
  private final Dbm dbm;
  private final Durability durability;

  Batch(Dbm dbm, Durability durability) {
    this.dbm = dbm;
    this.durability = durability;
    long h = Native.batchNew();
    this.handle = h;
    CLEANER.register(this, () -> Native.batchFree(h));
  }

  /** @return the durability of the commit */
  public Durability durability() {
    return durability;
  }

  /**
   * Sets {@code key} to {@code value} at the commit.
   *
   * @param key the key
   * @param value the value
   * @return this batch
   */
  public Batch set(byte[] key, byte[] value) {
    try {
      Native.batchSet(handle, key, value);
    } finally {
      Reference.reachabilityFence(this);
    }
    return this;
  }

  /**
   * Sets {@code key} to {@code value} at the commit, both UTF-8.
   *
   * @param key the key
   * @param value the value
   * @return this batch
   */
  public Batch set(String key, String value) {
    return set(Dbm.utf8(key), Dbm.utf8(value));
  }

  /**
   * Removes {@code key} at the commit.
   *
   * @param key the key
   * @return this batch
   */
  public Batch remove(byte[] key) {
    try {
      Native.batchRemove(handle, key);
    } finally {
      Reference.reachabilityFence(this);
    }
    return this;
  }

  /**
   * Removes {@code key} (UTF-8) at the commit.
   *
   * @param key the key
   * @return this batch
   */
  public Batch remove(String key) {
    return remove(Dbm.utf8(key));
  }

  /**
   * Appends {@code value} to {@code key}'s value at the commit, after {@code delimiter} if it had
   * one.
   *
   * @param key the key
   * @param value what to append
   * @param delimiter what goes between, or null for nothing
   * @return this batch
   */
  public Batch append(byte[] key, byte[] value, byte[] delimiter) {
    try {
      Native.batchAppend(handle, key, value, delimiter);
    } finally {
      Reference.reachabilityFence(this);
    }
    return this;
  }

  /**
   * Adds {@code delta} to {@code key}'s number at the commit, starting from {@code initial} if it
   * has none.
   *
   * @param key the key
   * @param delta what to add
   * @param initial the number of an absent key
   * @return this batch
   */
  public Batch increment(byte[] key, long delta, long initial) {
    try {
      Native.batchIncrement(handle, key, delta, initial);
    } finally {
      Reference.reachabilityFence(this);
    }
    return this;
  }

  /** @return the number of writes gathered */
  public int size() {
    try {
      return Native.batchSize(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Applies the writes as one unit; the batch is finished.
   *
   * @throws KuraException of kind {@link KuraException.Kind#INFEASIBLE} if the batch was finished
   *     already or the database is closed
   */
  public void commit() {
    try {
      Native.batchCommit(handle, dbm.handle, durability.ordinal());
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(dbm);
    }
  }

  /** Drops the writes; the batch is finished. Nothing if it is finished. */
  public void discard() {
    try {
      Native.batchDiscard(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return whether writes can still be added */
  public boolean isActive() {
    try {
      return Native.batchIsActive(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Discards the writes unless they were committed. */
  @Override
  public void close() {
    discard();
  }
}

package io.kuradb;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;

/**
 * A serializable transaction of a {@link Dbm}, from {@link Dbm#begin}: it
 * reads the database as of its start plus its own writes, and {@link #commit}
 * applies its writes as one unit only if no other commit changed what it read
 * meanwhile; otherwise the commit throws a {@link KuraException} of kind
 * {@link KuraException.Kind#CONFLICT} and applies nothing.
 *
 * <pre>{@code
 * try (Transaction tx = db.begin(Durability.SYNC)) {
 *   long alice = Long.parseLong(tx.getString("alice"));
 *   tx.set("alice", Long.toString(alice - 30));
 *   tx.set("bob", "30");
 *   tx.commit();
 * }
 * }</pre>
 *
 * <p>{@link #close} aborts it unless it was committed, so an exception in the
 * block leaves the database as it was. After a commit, an abort or the
 * database's close, every call but {@code abort} and {@code close} throws a
 * {@link KuraException} of kind {@link KuraException.Kind#INFEASIBLE}. One
 * thread at a time.
 */
public final class Transaction implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  private final long handle;
  private final Durability durability;
  // Keeps the database reachable while the transaction is.
  @SuppressWarnings("unused")
  private final Dbm dbm;

  /** A point in a transaction's writes, from {@link #savepoint()}. */
  public static final class Savepoint {
    private final Transaction owner;
    private final long index;

    private Savepoint(Transaction owner, long index) {
      this.owner = owner;
      this.index = index;
    }
  }

  Transaction(Dbm dbm, long handle, Durability durability) {
    this.dbm = dbm;
    this.handle = handle;
    this.durability = durability;
    CLEANER.register(this, () -> Native.txFree(handle));
  }

  /** @return the durability of the commit */
  public Durability durability() {
    return durability;
  }

  /**
   * @param key the key
   * @return its value as this transaction sees it, or null if it has none
   */
  public byte[] get(byte[] key) {
    try {
      return Native.txGet(handle, key);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * @param key the key (UTF-8)
   * @return its value decoded as UTF-8, or null if it has none
   */
  public String getString(String key) {
    return Dbm.text(get(Dbm.utf8(key)));
  }

  /**
   * Sets {@code key} to {@code value} in this transaction.
   *
   * @param key the key
   * @param value the value
   */
  public void set(byte[] key, byte[] value) {
    try {
      Native.txSet(handle, key, value);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Sets {@code key} to {@code value} in this transaction, both UTF-8.
   *
   * @param key the key
   * @param value the value
   */
  public void set(String key, String value) {
    set(Dbm.utf8(key), Dbm.utf8(value));
  }

  /**
   * Removes {@code key} in this transaction.
   *
   * @param key the key
   * @return whether it had a record
   */
  public boolean remove(byte[] key) {
    try {
      return Native.txRemove(handle, key);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Removes {@code key} (UTF-8) in this transaction.
   *
   * @param key the key
   * @return whether it had a record
   */
  public boolean remove(String key) {
    return remove(Dbm.utf8(key));
  }

  /**
   * Appends {@code value} to {@code key}'s value, after {@code delimiter} if it had one.
   *
   * @param key the key
   * @param value what to append
   * @param delimiter what goes between, or null for nothing
   */
  public void append(byte[] key, byte[] value, byte[] delimiter) {
    try {
      Native.txAppend(handle, key, value, delimiter);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Adds {@code delta} to {@code key}'s number (8 bytes, big-endian), starting from
   * {@code initial} if it has none.
   *
   * @param key the key
   * @param delta what to add
   * @param initial the number of an absent key
   * @return the new number
   */
  public long increment(byte[] key, long delta, long initial) {
    try {
      return Native.txIncrement(handle, key, delta, initial);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * A point to come back to with {@link #rollbackTo}: the writes made so far.
   *
   * @return the savepoint
   */
  public Savepoint savepoint() {
    try {
      return new Savepoint(this, Native.txSavepoint(handle));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Undoes the writes made since {@code savepoint}; what was read stays read.
   *
   * @param savepoint a savepoint of this transaction
   * @throws IllegalArgumentException if it is another transaction's
   */
  public void rollbackTo(Savepoint savepoint) {
    if (savepoint.owner != this) {
      throw new IllegalArgumentException("the savepoint belongs to another transaction");
    }
    try {
      Native.txRollbackTo(handle, savepoint.index);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Applies the writes as one unit. The transaction is finished whatever the outcome.
   *
   * @throws KuraException of kind {@link KuraException.Kind#CONFLICT} (nothing applied) if
   *     another commit changed what this transaction read; of kind {@link
   *     KuraException.Kind#INFEASIBLE} if it was finished already or its database closed
   */
  public void commit() {
    try {
      Native.txCommit(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Drops the writes and finishes the transaction; nothing if it is finished. */
  public void abort() {
    try {
      Native.txAbort(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return whether the transaction is neither finished nor its database closed */
  public boolean isActive() {
    try {
      return Native.txIsActive(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Aborts the transaction unless it was committed. */
  @Override
  public void close() {
    abort();
  }

  @Override
  public String toString() {
    return "Transaction(" + (isActive() ? "active" : "finished") + ", " + durability + ")";
  }
}

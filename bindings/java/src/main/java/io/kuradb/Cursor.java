package io.kuradb;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.AbstractMap;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;

/**
 * A cursor over a {@link Dbm}'s records: iterate it from its position
 * ({@code for (Map.Entry<byte[], byte[]> e : cursor)}), or move it with
 * {@link #first}, {@link #jump}, {@link #next}, … and read it with {@link #key}
 * and {@link #value}. {@code last}, {@code previous} and the lower/upper jumps
 * need an ordered database (tree, skip, baby, stdtree). One thread at a time;
 * closing the database closes its cursors.
 */
public final class Cursor implements AutoCloseable, Iterable<Map.Entry<byte[], byte[]>> {
  private static final Cleaner CLEANER = Cleaner.create();

  final long handle;
  // Keeps the database reachable (and so its handle allocated) while the cursor is.
  @SuppressWarnings("unused")
  private final Dbm dbm;

  Cursor(Dbm dbm, long handle) {
    this.dbm = dbm;
    this.handle = handle;
    CLEANER.register(this, () -> Native.cursorFree(handle));
  }

  /** Moves to the first record. */
  public void first() {
    try {
      Native.cursorFirst(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Moves to the last record (ordered databases). */
  public void last() {
    try {
      Native.cursorLast(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Moves to {@code key}, or in an ordered database to the first key after it.
   *
   * @param key the key
   */
  public void jump(byte[] key) {
    try {
      Native.cursorJump(handle, key);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Moves to the last key before {@code key} (or equal to it if {@code inclusive}).
   *
   * @param key the key
   * @param inclusive whether {@code key} itself qualifies
   */
  public void jumpLower(byte[] key, boolean inclusive) {
    try {
      Native.cursorJumpLower(handle, key, inclusive);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Moves to the first key after {@code key} (or equal to it if {@code inclusive}).
   *
   * @param key the key
   * @param inclusive whether {@code key} itself qualifies
   */
  public void jumpUpper(byte[] key, boolean inclusive) {
    try {
      Native.cursorJumpUpper(handle, key, inclusive);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Moves to the next record. */
  public void next() {
    try {
      Native.cursorNext(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Moves to the previous record (ordered databases). */
  public void previous() {
    try {
      Native.cursorPrevious(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the current record, or null past the end */
  public Map.Entry<byte[], byte[]> get() {
    byte[][] record;
    try {
      record = Native.cursorGet(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
    return record == null ? null : new AbstractMap.SimpleImmutableEntry<>(record[0], record[1]);
  }

  /** @return the current key, or null past the end */
  public byte[] key() {
    Map.Entry<byte[], byte[]> e = get();
    return e == null ? null : e.getKey();
  }

  /** @return the current value, or null past the end */
  public byte[] value() {
    Map.Entry<byte[], byte[]> e = get();
    return e == null ? null : e.getValue();
  }

  /**
   * Replaces the current record's value.
   *
   * @param value the new value
   */
  public void set(byte[] value) {
    try {
      Native.cursorSet(handle, value);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Removes the current record (the cursor moves to the next). */
  public void remove() {
    try {
      Native.cursorRemove(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** The records from the current position on; each step moves the cursor. */
  @Override
  public Iterator<Map.Entry<byte[], byte[]>> iterator() {
    return new Iterator<>() {
      private byte[][] pending;

      @Override
      public boolean hasNext() {
        if (pending == null) {
          try {
            pending = Native.cursorStep(handle);
          } finally {
            Reference.reachabilityFence(Cursor.this);
          }
        }
        return pending != null;
      }

      @Override
      public Map.Entry<byte[], byte[]> next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        Map.Entry<byte[], byte[]> e = new AbstractMap.SimpleImmutableEntry<>(pending[0], pending[1]);
        pending = null;
        return e;
      }
    };
  }

  /** Closes the cursor; a second call does nothing. */
  @Override
  public void close() {
    try {
      Native.cursorClose(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }
}

package io.kuradb;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * A read view of a {@link Dbm} at one commit, from {@link Dbm#snapshot}: its
 * reads see that state while writers go on. Iterating it gives its records, in
 * the database's key order if it has one.
 *
 * <pre>{@code
 * try (Snapshot view = db.snapshot()) {
 *   for (Map.Entry<byte[], byte[]> e : view) { ... }
 * }
 * }</pre>
 *
 * <p>{@link #close} releases it (the old values it kept); so does the
 * database's close. Reads after that throw a {@link KuraException} of kind
 * {@link KuraException.Kind#INFEASIBLE}.
 */
public final class Snapshot implements AutoCloseable, Iterable<Map.Entry<byte[], byte[]>> {
  private static final Cleaner CLEANER = Cleaner.create();

  private final long handle;
  // Keeps the database reachable while the snapshot is.
  @SuppressWarnings("unused")
  private final Dbm dbm;

  Snapshot(Dbm dbm, long handle) {
    this.dbm = dbm;
    this.handle = handle;
    CLEANER.register(this, () -> Native.snapshotFree(handle));
  }

  /**
   * @param key the key
   * @return its value in this view, or null if it has none
   */
  public byte[] get(byte[] key) {
    try {
      return Native.snapshotGet(handle, key);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * @param key the key (UTF-8)
   * @return its value in this view decoded as UTF-8, or null if it has none
   */
  public String getString(String key) {
    return Dbm.text(get(Dbm.utf8(key)));
  }

  /** @return every key of this view, in the database's key order if it has one */
  public List<byte[]> keys() {
    try {
      return List.of(Native.snapshotKeys(handle));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return every record of this view, in the database's key order if it has one */
  public List<Map.Entry<byte[], byte[]>> items() {
    byte[][] flat;
    try {
      flat = Native.snapshotItems(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
    List<Map.Entry<byte[], byte[]>> items = new ArrayList<>(flat.length / 2);
    for (int i = 0; i + 1 < flat.length; i += 2) {
      items.add(new AbstractMap.SimpleImmutableEntry<>(flat[i], flat[i + 1]));
    }
    return items;
  }

  /** The records of this view, read when the iteration starts. */
  @Override
  public Iterator<Map.Entry<byte[], byte[]>> iterator() {
    return items().iterator();
  }

  /** @return the number of records in this view */
  public long count() {
    try {
      return Native.snapshotCount(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return whether the view is still held */
  public boolean isActive() {
    try {
      return Native.snapshotIsActive(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Releases the view; a second call does nothing. */
  @Override
  public void close() {
    try {
      Native.snapshotRelease(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }
}

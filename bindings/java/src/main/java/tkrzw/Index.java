package tkrzw;

import io.kuradb.Native;

/**
 * A secondary index, as the reference's {@code tkrzw.Index}: a set of
 * (key, value) pairs in which a key may have many values, kept in order.
 * A path opens (or creates) an index file, a tree file of kuradb's
 * {@code FileIndex} (tree parameters apply; {@code key_comparator} must be a
 * pair comparator, {@code PairLexicalKeyComparator} by default); an empty
 * path makes an index in memory ({@code MemIndex}), whose only parameter is
 * {@code key_comparator}. All methods but {@code open} and {@code close}
 * may be called from several threads at once; using an index that is not
 * open answers PRECONDITION_ERROR (false, -1 or an empty array where the
 * method answers no status).
 */
public class Index extends NativeHandle {
  /** An index, not yet open. */
  public Index() {
    super("index", Native::indexOpen, Native::indexClose, Native::indexFree);
  }

  /**
   * @param key the key
   * @param value the value
   * @return whether the pair is there
   */
  public boolean contains(byte[] key, byte[] value) {
    return Calls.reporting(this, null, () -> Native.indexContains(handle(), key, value), false);
  }

  /**
   * @param key the key
   * @param value the value
   * @return whether the pair is there
   */
  public boolean contains(String key, String value) {
    return contains(Convert.utf8(key), Convert.utf8(value));
  }

  /**
   * @param key the key
   * @param max the most values (0: all)
   * @return the key's values in order; empty on failure
   */
  public byte[][] getValues(byte[] key, int max) {
    return Calls.reporting(this, null, () -> Native.indexGetValues(handle(), key, max), new byte[0][]);
  }

  /**
   * @param key the key
   * @param max the most values (0: all)
   * @return the key's values as strings
   */
  public String[] getValues(String key, int max) {
    return Convert.texts(getValues(Convert.utf8(key), max));
  }

  /**
   * @param key the key
   * @param value the value
   * @return the status of adding the pair (adding one already there changes nothing)
   */
  public Status add(byte[] key, byte[] value) {
    return Calls.status(this, () -> Native.indexAdd(handle(), key, value));
  }

  /**
   * @param key the key
   * @param value the value
   * @return the status
   */
  public Status add(String key, String value) {
    return add(Convert.utf8(key), Convert.utf8(value));
  }

  /**
   * @param key the key
   * @param value the value
   * @return the status; NOT_FOUND_ERROR if the pair was not there
   */
  public Status remove(byte[] key, byte[] value) {
    Status status = new Status();
    Boolean removed = Calls.reporting(this, status, () -> Native.indexRemove(handle(), key, value), null);
    return Boolean.FALSE.equals(removed) ? new Status(Status.NOT_FOUND_ERROR, "no such pair") : status;
  }

  /**
   * @param key the key
   * @param value the value
   * @return the status
   */
  public Status remove(String key, String value) {
    return remove(Convert.utf8(key), Convert.utf8(value));
  }

  /** @return the number of pairs, or -1 on failure */
  public long count() {
    return Calls.reporting(this, null, () -> Native.indexCount(handle()), -1L);
  }

  /** @return the index file's path (empty in memory), or null on failure */
  public String getFilePath() {
    return Calls.reporting(this, null, () -> Native.indexPath(handle()), null);
  }

  /** @return the status of removing every pair */
  public Status clear() {
    return Calls.status(this, () -> Native.indexClear(handle()));
  }

  /** @return the status of rewriting the index compactly */
  public Status rebuild() {
    return Calls.status(this, () -> Native.indexRebuild(handle()));
  }

  /**
   * @param hard whether to wait for the device
   * @return the status
   */
  public Status synchronize(boolean hard) {
    return Calls.status(this, () -> Native.indexSynchronize(handle(), hard));
  }

  /** @return whether the index is open */
  public boolean isOpen() {
    return currentHandle() != 0;
  }

  /** @return whether the index takes changes */
  public boolean isWritable() {
    return Calls.reporting(this, null, () -> Native.indexIsWritable(handle()), false);
  }

  /** @return an iterator over the pairs, not yet positioned (call {@code first()}) */
  public IndexIterator makeIterator() {
    return new IndexIterator(this);
  }

  /** @return {@code tkrzw.Index(path=..., num_records=N)}, or {@code tkrzw.Index(unopened)} */
  @Override
  public String toString() {
    if (currentHandle() == 0) {
      return "tkrzw.Index(unopened)";
    }
    return "tkrzw.Index(path=" + getFilePath() + ", num_records=" + count() + ")";
  }
}

package tkrzw;

import io.kuradb.Native;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;

/**
 * A cursor over a {@link DBM}'s records, as the reference's
 * {@code tkrzw.Iterator}. Methods answer a {@link Status} where the reference
 * does; {@link #destruct()} (or {@link #close()}) releases it.
 */
public class Iterator implements AutoCloseable {
  private final long handle;
  private final DBM dbm;

  Iterator(DBM dbm, long handle) {
    this.dbm = dbm;
    this.handle = handle;
    Calls.CLEANER.register(this, () -> Native.cursorFree(handle));
  }

  private interface Step {
    void run();
  }

  private Status call(Step step) {
    return Calls.status(this, step::run);
  }

  /** Releases the iterator; later calls fail. */
  public void destruct() {
    try {
      Native.cursorClose(handle);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** The same as {@link #destruct()}, for try-with-resources. */
  @Override
  public void close() {
    destruct();
  }

  /** @return the status of moving to the first record */
  public Status first() {
    return call(() -> Native.cursorFirst(handle));
  }

  /** @return the status of moving to the last record */
  public Status last() {
    return call(() -> Native.cursorLast(handle));
  }

  /**
   * @param key the key to move to
   * @return the status
   */
  public Status jump(byte[] key) {
    return call(() -> Native.cursorJump(handle, key));
  }

  /**
   * @param key the key to move to
   * @return the status
   */
  public Status jump(String key) {
    return jump(key.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * @param key the bound
   * @param inclusive whether the bound itself qualifies
   * @return the status of moving to the last record before the bound
   */
  public Status jumpLower(byte[] key, boolean inclusive) {
    return call(() -> Native.cursorJumpLower(handle, key, inclusive));
  }

  /**
   * @param key the bound
   * @param inclusive whether the bound itself qualifies
   * @return the status
   */
  public Status jumpLower(String key, boolean inclusive) {
    return jumpLower(key.getBytes(StandardCharsets.UTF_8), inclusive);
  }

  /**
   * @param key the bound
   * @param inclusive whether the bound itself qualifies
   * @return the status of moving to the first record after the bound
   */
  public Status jumpUpper(byte[] key, boolean inclusive) {
    return call(() -> Native.cursorJumpUpper(handle, key, inclusive));
  }

  /**
   * @param key the bound
   * @param inclusive whether the bound itself qualifies
   * @return the status
   */
  public Status jumpUpper(String key, boolean inclusive) {
    return jumpUpper(key.getBytes(StandardCharsets.UTF_8), inclusive);
  }

  /** @return the status of moving to the next record */
  public Status next() {
    return call(() -> Native.cursorNext(handle));
  }

  /** @return the status of moving to the previous record */
  public Status previous() {
    return call(() -> Native.cursorPrevious(handle));
  }

  /**
   * @param status receives the outcome (NOT_FOUND_ERROR past the end), or null
   * @return the current record as {key, value}, or null
   */
  public byte[][] get(Status status) {
    Status.And<byte[][]> r = Calls.and(this, () -> Native.cursorGet(handle), Status.NOT_FOUND_ERROR);
    Convert.report(status, r.status);
    return r.value;
  }

  /** @return the current record as {key, value}, or null */
  public byte[][] get() {
    return get(null);
  }

  /**
   * @param status receives the outcome, or null
   * @return the current record as UTF-8 strings, or null
   */
  public String[] getString(Status status) {
    byte[][] record = get(status);
    return record == null ? null : new String[] {Convert.text(record[0]), Convert.text(record[1])};
  }

  /** @return the current record as UTF-8 strings, or null */
  public String[] getString() {
    return getString(null);
  }

  /** @return the current key, or null */
  public byte[] getKey() {
    byte[][] record = get(null);
    return record == null ? null : record[0];
  }

  /** @return the current key as a UTF-8 string, or null */
  public String getKeyString() {
    return Convert.text(getKey());
  }

  /** @return the current value, or null */
  public byte[] getValue() {
    byte[][] record = get(null);
    return record == null ? null : record[1];
  }

  /** @return the current value as a UTF-8 string, or null */
  public String getValueString() {
    return Convert.text(getValue());
  }

  /**
   * @param value the new value of the current record
   * @return the status
   */
  public Status set(byte[] value) {
    return call(() -> Native.cursorSet(handle, value));
  }

  /**
   * @param value the new value of the current record
   * @return the status
   */
  public Status set(String value) {
    return set(value.getBytes(StandardCharsets.UTF_8));
  }

  /** @return the status of removing the current record */
  public Status remove() {
    return call(() -> Native.cursorRemove(handle));
  }

  /**
   * Gets the current record and moves to the next.
   *
   * @param status receives the outcome (NOT_FOUND_ERROR past the end), or null
   * @return the record as {key, value}, or null
   */
  public byte[][] step(Status status) {
    Status.And<byte[][]> r = Calls.and(this, () -> Native.cursorStep(handle), Status.NOT_FOUND_ERROR);
    Convert.report(status, r.status);
    return r.value;
  }

  /** @return the record as {key, value} before moving on, or null */
  public byte[][] step() {
    return step(null);
  }

  /**
   * @param status receives the outcome (NOT_FOUND_ERROR past the end), or null
   * @return the record as UTF-8 strings before moving on, or null
   */
  public String[] stepString(Status status) {
    return texts(step(status));
  }

  /** @return the record as UTF-8 strings before moving on, or null */
  public String[] stepString() {
    return stepString(null);
  }

  /**
   * Removes the database's first record and answers it, as {@link DBM#popFirst(Status)} does.
   *
   * @param status receives the outcome (NOT_FOUND_ERROR if there is none), or null
   * @return the first record as {key, value}, or null
   */
  public byte[][] popFirst(Status status) {
    return dbm.popFirst(status);
  }

  /** @return the first record as {key, value}, removed, or null */
  public byte[][] popFirst() {
    return popFirst(null);
  }

  /**
   * @param status receives the outcome (NOT_FOUND_ERROR if there is none), or null
   * @return the first record as UTF-8 strings, removed, or null
   */
  public String[] popFirstString(Status status) {
    return texts(popFirst(status));
  }

  /** @return the first record as UTF-8 strings, removed, or null */
  public String[] popFirstString() {
    return popFirstString(null);
  }

  private static String[] texts(byte[][] record) {
    return record == null ? null : new String[] {Convert.text(record[0]), Convert.text(record[1])};
  }

  @Override
  public String toString() {
    byte[] key = null;
    try {
      key = getKey();
    } catch (RuntimeException e) {
      // A closed iterator has no position to show.
    }
    return "tkrzw.Iterator(key=" + (key == null ? "(unlocated)" : Convert.text(key)) + ")";
  }
}

package tkrzw;

import io.kuradb.Native;

/**
 * A position among the pairs of an {@link Index}, as the reference's
 * {@code tkrzw.IndexIterator}. It keeps its position as the pair it is at,
 * so pairs added or removed meanwhile never invalidate it: {@link #get()}
 * answers the pair at that place now (the next one if it was removed). For
 * one thread at a time.
 */
public class IndexIterator {
  private static final int FIRST = 0;
  private static final int LAST = 1;
  private static final int JUMP = 2;
  private static final int NEXT = 3;
  private static final int PREVIOUS = 4;

  private final Index index;
  /** The pair it is at, or null: nowhere. */
  private byte[][] at;

  IndexIterator(Index index) {
    this.index = index;
  }

  private void step(int step, byte[] key, byte[] value) {
    at = Calls.reporting(index, null, () -> Native.indexStep(index.handle(), step, key, value), null);
  }

  /** Releases the iterator (it holds nothing native: this only forgets its position). */
  public void destruct() {
    at = null;
  }

  /** Moves to the first pair. */
  public void first() {
    step(FIRST, null, null);
  }

  /** Moves to the last pair. */
  public void last() {
    step(LAST, null, null);
  }

  /**
   * Moves to the first pair at or after (key, value).
   *
   * @param key the key
   * @param value the value
   */
  public void jump(byte[] key, byte[] value) {
    if (key == null || value == null) {
      throw new NullPointerException("the key and the value of a jump must not be null");
    }
    step(JUMP, key, value);
  }

  /**
   * @param key the key
   * @param value the value
   */
  public void jump(String key, String value) {
    jump(Convert.utf8(key), Convert.utf8(value));
  }

  /** Moves to the next pair. */
  public void next() {
    if (at != null) {
      step(NEXT, at[0], at[1]);
    }
  }

  /** Moves to the previous pair. */
  public void previous() {
    if (at != null) {
      step(PREVIOUS, at[0], at[1]);
    }
  }

  /** @return the pair at the position as {key, value}, or null if there is none */
  public byte[][] get() {
    if (at != null) {
      step(JUMP, at[0], at[1]);
    }
    return at == null ? null : new byte[][] {at[0].clone(), at[1].clone()};
  }

  /** @return the pair at the position as strings, or null */
  public String[] getString() {
    byte[][] pair = get();
    return pair == null ? null : Convert.texts(pair);
  }

  /** @return {@code tkrzw.IndexIterator(key=..., value=...)} or {@code tkrzw.IndexIterator(unlocated)} */
  @Override
  public String toString() {
    byte[][] pair = at;
    if (pair == null) {
      return "tkrzw.IndexIterator(unlocated)";
    }
    return "tkrzw.IndexIterator(key=" + Convert.text(pair[0]) + ", value=" + Convert.text(pair[1]) + ")";
  }
}

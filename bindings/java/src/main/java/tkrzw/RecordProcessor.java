package tkrzw;

import java.nio.charset.StandardCharsets;

/**
 * A function shown a record, as the reference's {@code tkrzw.RecordProcessor}:
 * it answers {@link #NOOP} to leave the record, {@link #REMOVE} to remove it,
 * or the new value.
 */
@FunctionalInterface
public interface RecordProcessor {
  /** The answer that leaves the record as it is (compared by identity). */
  byte[] NOOP = new byte[] {'\0', 'N', 'O', 'O', 'P', '\0'};

  /** The answer that removes the record (compared by identity). */
  byte[] REMOVE = new byte[] {'\0', 'R', 'E', 'M', 'O', 'V', 'E', '\0'};

  /**
   * Decides what to do with a record.
   *
   * @param key the key (null at the start and the end of {@code DBM.processEach})
   * @param value the value, or null if the record is absent
   * @return {@link #NOOP}, {@link #REMOVE}, or the new value
   */
  byte[] process(byte[] key, byte[] value);

  /** A key and the processor for it, as {@code DBM.processMulti} takes them. */
  class WithKey {
    /** The key. */
    public byte[] key;
    /** The processor. */
    public RecordProcessor processor;

    /**
     * @param key the key
     * @param processor the processor
     */
    public WithKey(byte[] key, RecordProcessor processor) {
      this.key = key;
      this.processor = processor;
    }

    /**
     * @param key the key, UTF-8 encoded
     * @param processor the processor
     */
    public WithKey(String key, RecordProcessor processor) {
      this(key.getBytes(StandardCharsets.UTF_8), processor);
    }
  }
}

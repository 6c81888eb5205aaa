package tkrzw;

import io.kuradb.Dbm;
import io.kuradb.Native;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/** Conversions the {@code tkrzw} classes share: strings, record maps, processor answers. */
final class Convert {
  private Convert() {}

  static byte[] utf8(String s) {
    return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
  }

  static String text(byte[] b) {
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }

  static void report(Status status, Status outcome) {
    if (status != null) {
      status.set(outcome.getCode(), outcome.getMessage());
    }
  }

  /**
   * {@code text}'s UTF-8 bytes written as the reference's {@code toString} writes a path: C
   * escapes for the control characters and the backslash, {@code \\xNN} for the others below
   * a space, DEL and every byte of a non-ASCII character.
   */
  static String escapeC(String text) {
    byte[] bytes = utf8(text);
    StringBuilder out = new StringBuilder(bytes.length);
    for (int i = 0; i < bytes.length; i++) {
      int c = bytes[i] & 0xff;
      switch (c) {
        case 0:
          // An octal digit after it would extend a short escape.
          boolean digitNext = i + 1 < bytes.length && bytes[i + 1] >= '0' && bytes[i + 1] <= '7';
          out.append(digitNext ? "\\x00" : "\\0");
          break;
        case 0x07: out.append("\\a"); break;
        case '\b': out.append("\\b"); break;
        case '\t': out.append("\\t"); break;
        case '\n': out.append("\\n"); break;
        case 0x0b: out.append("\\v"); break;
        case '\f': out.append("\\f"); break;
        case '\r': out.append("\\r"); break;
        case '\\': out.append("\\\\"); break;
        default:
          if (c < ' ' || c >= 0x7f) {
            out.append(String.format("\\x%02x", c));
          } else {
            out.append((char) c);
          }
      }
    }
    return out.toString();
  }

  static byte[][][] split(Map<byte[], byte[]> records) {
    byte[][] keys = new byte[records.size()][];
    byte[][] values = new byte[records.size()][];
    int i = 0;
    for (Map.Entry<byte[], byte[]> e : records.entrySet()) {
      keys[i] = e.getKey();
      values[i++] = e.getValue();
    }
    return new byte[][][] {keys, values};
  }

  static Map<byte[], byte[]> raw(Map<String, String> records, boolean anyAware) {
    Map<byte[], byte[]> out = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : records.entrySet()) {
      String v = e.getValue();
      out.put(utf8(e.getKey()), anyAware && v == DBM.ANY_STRING ? DBM.ANY_BYTES : utf8(v));
    }
    return out;
  }

  static byte[] anyAware(String s) {
    return s == DBM.ANY_STRING ? DBM.ANY_BYTES : utf8(s);
  }

  static Native.Callback bridge(RecordProcessor processor, boolean writable) {
    return (i, k, v) -> answer(processor.process(k, v), writable);
  }

  /** As the reference, a read-only call leaves the record whatever the processor answers. */
  static byte[] answer(byte[] answer, boolean writable) {
    return writable ? answer(answer) : null;
  }

  static byte[] answer(byte[] answer) {
    if (answer == null || answer == RecordProcessor.NOOP) {
      return null;
    }
    return answer == RecordProcessor.REMOVE ? Dbm.REMOVE : answer;
  }

  static String[] flatten(Map<String, String> params) {
    if (params == null) {
      return null;
    }
    String[] flat = new String[params.size() * 2];
    int i = 0;
    for (Map.Entry<String, String> e : params.entrySet()) {
      flat[i++] = e.getKey();
      flat[i++] = e.getValue();
    }
    return flat;
  }

  static String[] texts(byte[][] items) {
    String[] out = new String[items.length];
    for (int i = 0; i < items.length; i++) {
      out[i] = text(items[i]);
    }
    return out;
  }

  static byte[][] utf8s(String[] items) {
    byte[][] out = new byte[items.length][];
    for (int i = 0; i < items.length; i++) {
      out[i] = utf8(items[i]);
    }
    return out;
  }

  /** The first {@code size} bytes of {@code data} (all of them if size is its length). */
  static byte[] prefix(byte[] data, long size) {
    if (data == null || size == data.length) {
      return data;
    }
    if (size < 0 || size > data.length) {
      throw new IllegalArgumentException("size " + size + " is outside the buffer of " + data.length);
    }
    return java.util.Arrays.copyOf(data, (int) size);
  }
}

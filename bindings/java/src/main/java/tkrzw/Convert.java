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

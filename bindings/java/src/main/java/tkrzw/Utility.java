package tkrzw;

import io.kuradb.Native;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The reference's {@code tkrzw.Utility}: version, memory figures, its exact
 * hash functions and edit distance, and parameter parsing.
 */
public class Utility {
  /** The version of kuradb (not of the reference). */
  public static final String VERSION;

  /** The size of a memory page. */
  public static final int PAGE_SIZE;

  /** The name of the operating system. */
  public static final String OS_NAME = System.getProperty("os.name");

  static {
    Native.load();
    VERSION = Native.version();
    PAGE_SIZE = (int) Math.min(Native.pageSize(), Integer.MAX_VALUE);
  }

  private Utility() {}

  /** Loads the native library (it is loaded at first use anyway). */
  public static void loadLibrary() {
    Native.load();
  }

  /** @return the version of kuradb */
  public static String getVersion() {
    return VERSION;
  }

  /** @return the name of the operating system */
  public static String getOSName() {
    return OS_NAME;
  }

  /** @return the machine's total memory in bytes */
  public static long getMemoryCapacity() {
    return Native.memoryCapacity();
  }

  /** @return the process's resident memory in bytes */
  public static long getMemoryUsage() {
    return Native.memoryUsage();
  }

  /**
   * The reference's primary hash (the one its hash databases bucket keys by).
   *
   * @param data the data
   * @param numBuckets the modulus; 0 for the full 64-bit range
   * @return the hash
   */
  public static long primaryHash(byte[] data, long numBuckets) {
    return Native.primaryHash(data, numBuckets);
  }

  /**
   * The reference's secondary hash (the one it shards keys by).
   *
   * @param data the data
   * @param numShards the modulus; 0 for the full 64-bit range
   * @return the hash
   */
  public static long secondaryHash(byte[] data, long numShards) {
    return Native.secondaryHash(data, numShards);
  }

  /**
   * The Levenshtein edit distance over Unicode characters.
   *
   * @param a a string
   * @param b another
   * @return the distance
   */
  public static int editDistanceLev(String a, String b) {
    return Native.editDistanceLev(a, b);
  }

  /**
   * Parses {@code "key=value,key=value"} into a map (blank items are skipped).
   *
   * @param expr the expression, or null
   * @return the parameters, in their order (a {@code HashMap}, as the reference's type says)
   */
  public static HashMap<String, String> parseParams(String expr) {
    HashMap<String, String> params = new LinkedHashMap<>();
    if (expr == null) {
      return params;
    }
    for (String item : expr.split(",")) {
      int eq = item.indexOf('=');
      if (eq < 0) {
        continue;
      }
      String name = item.substring(0, eq).trim();
      if (!name.isEmpty()) {
        params.put(name, item.substring(eq + 1).trim());
      }
    }
    return params;
  }

  /**
   * The parameters of an open of {@code path} in kuradb's terms, by the binding core (as the
   * Python and Ruby layers do): translated as {@link #rebuildParams} translates (the running
   * tuning kept), waiting for another process's lock
   * unless told {@code no_wait}, and without {@code key_comparator} when the open reopens an
   * existing tree, whose file keeps its own order (the reference ignores the parameter then).
   */
  /**
   * A true-or-false parameter as the reference spells it; absent is false.
   *
   * @throws IllegalArgumentException for any other value
   */
  static boolean flag(String name, String value) {
    if (value == null) {
      return false;
    }
    switch (value.trim().toLowerCase(java.util.Locale.ROOT)) {
      case "true": case "1": case "yes": case "on": case "":
        return true;
      case "false": case "0": case "no": case "off":
        return false;
      default:
        throw new IllegalArgumentException("parameter " + name + " must be true or false, not \"" + value + "\"");
    }
  }

  static Map<String, String> openParams(String path, Map<String, String> params) {
    String[] flat = Native.compatOpenParams(path, Convert.flatten(params));
    return unflatten(flat);
  }

  /**
   * Serializes an integer into a big-endian binary sequence.
   *
   * @param num an integer
   * @return its 8 big-endian bytes
   */
  public static byte[] serializeInt(long num) {
    return Native.serializeInt(num);
  }

  /**
   * Deserializes a big-endian binary sequence into an integer.
   *
   * @param serialized a binary sequence (its first 8 bytes at most are read)
   * @return the integer
   */
  public static long deserializeInt(byte[] serialized) {
    return Native.deserializeInt(serialized);
  }

  /**
   * Serializes a floating-point number into a big-endian binary sequence.
   *
   * @param num a floating-point number
   * @return its 8 big-endian bytes (an IEEE double)
   */
  public static byte[] serializeFloat(double num) {
    return Native.serializeFloat(num);
  }

  /**
   * Deserializes a big-endian binary sequence into a floating-point number.
   *
   * @param serialized an IEEE single (4 bytes) or double (8 bytes)
   * @return the number, or NaN for any other length
   */
  public static double deserializeFloat(byte[] serialized) {
    return Native.deserializeFloat(serialized);
  }

  /**
   * The reference's rebuild parameters in kuradb's terms, by the binding core
   * (the same translation as the Python and Ruby layers): {@code concurrent}
   * is dropped (kuradb is always thread-safe); colons in {@code
   * access_options} separate options as the reference writes them; {@code
   * RECORD_COMP_AES} with a {@code cipher_key} is kuradb's authenticated
   * encryption; RC4 is refused (INVALID_ARGUMENT); the tuning of a running
   * database ({@code fbp_capacity}, ...), which kuradb takes at open, is dropped.
   */
  static Map<String, String> rebuildParams(Map<String, String> params) {
    if (params == null) {
      return null;
    }
    return unflatten(Native.rebuildParams(Convert.flatten(params)));
  }

  private static Map<String, String> unflatten(String[] flat) {
    Map<String, String> out = new LinkedHashMap<>();
    for (int i = 0; i + 1 < flat.length; i += 2) {
      out.put(flat[i], flat[i + 1]);
    }
    return out;
  }
}

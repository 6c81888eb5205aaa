package tkrzw;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The differential script's driver for Java's tkrzw layer
 * (bindings/tests/differential): {@code java tkrzw.DifferentialDriver SCRIPT DIR}.
 */
public final class DifferentialDriver {
  private final String dir;
  private final DBM dbm = new DBM();
  private final Index index = new Index();
  private Iterator iter;

  private DifferentialDriver(String dir) {
    this.dir = dir;
  }

  /** One spelling for every driver: lists joined by commas, maps sorted by key. */
  private static String show(Object answer) {
    if (answer == null) {
      return "-";
    }
    if (answer instanceof Map) {
      List<String> items = new ArrayList<>();
      for (Map.Entry<?, ?> e : new TreeMap<>((Map<?, ?>) answer).entrySet()) {
        items.add(show(e.getKey()) + "=" + show(e.getValue()));
      }
      return String.join(",", items);
    }
    if (answer instanceof String[]) {
      return String.join(",", (String[]) answer);
    }
    if (answer instanceof List) {
      List<String> items = new ArrayList<>();
      for (Object item : (List<?>) answer) {
        items.add(show(item));
      }
      return String.join(",", items);
    }
    if (answer instanceof byte[]) {
      return new String((byte[]) answer, StandardCharsets.UTF_8);
    }
    return answer.toString();
  }

  private static List<String> readLines(String path) {
    try {
      return Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + path, e);
    }
  }

  private static String hex(byte[] data) {
    StringBuilder out = new StringBuilder();
    for (byte b : data) {
      out.append(String.format("%02x", b));
    }
    return out.toString();
  }

  private static Map<String, String> records(String[] args, int from) {
    Map<String, String> out = new LinkedHashMap<>();
    for (int i = from; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      out.put(kv[0], kv[1]);
    }
    return out;
  }

  /** "k=v,k=-,k=*": "-" is absent, "*" any value. */
  private static Map<String, String> pairs(String spec) {
    Map<String, String> out = new LinkedHashMap<>();
    for (String item : spec.split(",")) {
      String[] kv = item.split("=", 2);
      out.put(kv[0], kv[1].equals("-") ? null : kv[1].equals("*") ? DBM.ANY_STRING : kv[1]);
    }
    return out;
  }

  private Object[] call(String op, String[] args) {
    Status status = new Status();
    Object answer = null;
    switch (op) {
      case "open":
        status = dbm.open(args[0], args[1].equals("true"), records(args, 2));
        break;
      case "close": status = dbm.close(); break;
      case "count": answer = dbm.count(); break;
      case "set": status = dbm.set(args[0], args[1], args[2].equals("true")); break;
      case "get": answer = dbm.get(args[0], status); break;
      case "append": status = dbm.append(args[0], args[1], args[2]); break;
      case "increment":
        long current = dbm.increment(args[0], Long.parseLong(args[1]), Long.parseLong(args[2]), status);
        // Java's answer for no value is Long.MIN_VALUE where the others answer none.
        answer = current == Long.MIN_VALUE ? null : current;
        break;
      case "compare_exchange": status = dbm.compareExchange(args[0], args[1], args[2]); break;
      case "remove": status = dbm.remove(args[0]); break;
      case "synchronize": status = dbm.synchronize(args[0].equals("true")); break;
      case "synchronize_with":
        Map<String, String> sync = new LinkedHashMap<>();
        sync.put("merge", args[0]);
        sync.put("reducer", "ReduceToFirst");
        status = dbm.synchronize(false, sync);
        answer = dbm.count();
        break;
      case "rebuild":
        status = dbm.rebuild(records(args, 0));
        answer = dbm.count();
        break;
      case "pop_first":
        String[] record = dbm.popFirstString(status);
        answer = record == null ? null : record[0] + ":" + record[1];
        break;
      case "pop_first_hex":
        byte[][] raw = dbm.popFirst(status);
        answer = raw == null ? null : hex(raw[0]) + ":" + show(raw[1]);
        break;
      case "set_multi":
        status = dbm.setMultiString(records(args, 1), args[0].equals("true"));
        break;
      case "get_multi": answer = dbm.getMulti(args); break;
      case "remove_multi": status = dbm.removeMulti(args); break;
      case "append_multi": status = dbm.appendMulti(records(args, 1), args[0]); break;
      case "compare_exchange_multi":
        status = dbm.compareExchangeMultiString(pairs(args[0]), pairs(args[1]));
        break;
      case "rekey":
        status = dbm.rekey(args[0], args[1], args[2].equals("true"), args[3].equals("true"));
        break;
      case "set_and_get": {
        Status.And<String> got = dbm.setAndGet(args[0], args[1], args[2].equals("true"));
        status = got.status;
        answer = got.value;
        break;
      }
      case "compare_exchange_and_get": {
        String expected = "*".equals(args[1]) ? DBM.ANY_STRING : args[1];
        Status.And<String> got = dbm.compareExchangeAndGet(args[0], expected, args[2]);
        status = got.status;
        answer = got.value;
        break;
      }
      case "remove_and_get": {
        Status.And<String> got = dbm.removeAndGet(args[0]);
        status = got.status;
        answer = got.value;
        break;
      }
      case "contains": answer = dbm.contains(args[0]); break;
      case "file_path": answer = String.valueOf(dbm.getFilePath()).replace(dir, "PATH"); break;
      case "file_size_positive": answer = dbm.getFileSize() > 0; break;
      case "should_be_rebuilt": answer = dbm.shouldBeRebuilt(); break;
      case "inspect": answer = dbm.inspect().get(args[0]); break;
      case "clear": status = dbm.clear(); break;
      case "push_last": status = dbm.pushLast(args[0], Double.parseDouble(args[1])); break;
      case "search":
        String[] keys = dbm.search(args[0], args[1], Integer.parseInt(args[2]));
        if ("sorted".equals(args[3])) {
          Arrays.sort(keys);
        }
        answer = keys;
        break;
      case "export_flat":
      case "import_flat": {
        File file = new File();
        boolean export = op.equals("export_flat");
        Map<String, String> params = new LinkedHashMap<>();
        params.put("truncate", String.valueOf(export));
        file.open(args[0], export, params);
        status = export ? dbm.exportToFlatRecords(file) : dbm.importFromFlatRecords(file);
        file.close();
        break;
      }
      case "export_keys": {
        File file = new File();
        Map<String, String> params = new LinkedHashMap<>();
        params.put("truncate", "true");
        file.open(args[0], true, params);
        status = dbm.exportKeysAsLines(file);
        file.close();
        List<String> lines = new ArrayList<>(readLines(args[0]));
        lines.sort(null);
        answer = lines;
        break;
      }
      case "process": {
        List<String> seen = new ArrayList<>();
        String fate = args[1];
        status = dbm.process(args[0], (key, value) -> {
          seen.add(value == null ? null : show(value));
          if (fate.equals("noop")) {
            return RecordProcessor.NOOP;
          }
          return fate.equals("remove") ? RecordProcessor.REMOVE : fate.getBytes(StandardCharsets.UTF_8);
        }, args.length < 3);
        answer = seen;
        break;
      }
      case "process_multi": {
        List<String> seen = new ArrayList<>();
        List<RecordProcessor.WithKey> procs = new ArrayList<>();
        for (Map.Entry<String, String> pair : pairs(args[0]).entrySet()) {
          String fate = pair.getValue();
          procs.add(new RecordProcessor.WithKey(pair.getKey().getBytes(StandardCharsets.UTF_8), (key, value) -> {
            seen.add(show(key) + "=" + show(value));
            if (fate.equals("noop")) {
              return RecordProcessor.NOOP;
            }
            return fate.equals("remove") ? RecordProcessor.REMOVE : fate.getBytes(StandardCharsets.UTF_8);
          }));
        }
        status = dbm.processMulti(procs, args.length < 2);
        seen.sort(null);
        answer = seen;
        break;
      }
      case "process_each": {
        List<String> seen = new ArrayList<>();
        String fate = args[0];
        status = dbm.processEach((key, value) -> {
          seen.add(show(key) + "=" + show(value));
          if (fate.equals("noop")) {
            return RecordProcessor.NOOP;
          }
          return fate.equals("remove") ? RecordProcessor.REMOVE : fate.getBytes(StandardCharsets.UTF_8);
        }, args.length < 2);
        seen.sort(null);
        answer = seen;
        break;
      }
      case "iter": iter = dbm.makeIterator(); break;
      case "iter_all": {
        Iterator cursor = dbm.makeIterator();
        cursor.first();
        List<String> found = new ArrayList<>();
        String[] pair;
        while ((pair = cursor.getString()) != null) {
          found.add(pair[0] + ":" + pair[1]);
          cursor.next();
        }
        found.sort(null);
        answer = found;
        break;
      }
      case "iter_first": status = iter.first(); break;
      case "iter_last": status = iter.last(); break;
      case "iter_jump": status = iter.jump(args[0]); break;
      case "iter_jump_lower": status = iter.jumpLower(args[0], args[1].equals("true")); break;
      case "iter_jump_upper": status = iter.jumpUpper(args[0], args[1].equals("true")); break;
      case "iter_next": status = iter.next(); break;
      case "iter_previous": status = iter.previous(); break;
      case "iter_get": {
        String[] pair = iter.getString(status);
        answer = pair == null ? null : pair[0] + ":" + pair[1];
        break;
      }
      case "iter_step": {
        String[] pair = iter.stepString(status);
        answer = pair == null ? null : pair[0] + ":" + pair[1];
        break;
      }
      case "iter_set": status = iter.set(args[0]); break;
      case "iter_remove": status = iter.remove(); break;
      case "index_open": {
        Map<String, String> params = new LinkedHashMap<>();
        params.put("truncate", "true");
        status = index.open(args[0], true, params);
        break;
      }
      case "index_close": status = index.close(); break;
      case "index_add": status = index.add(args[0], args[1]); break;
      case "index_remove": status = index.remove(args[0], args[1]); break;
      case "index_get": answer = index.getValues(args[0], Integer.parseInt(args[1])); break;
      case "index_count": answer = index.count(); break;
      case "index_list": {
        IndexIterator cursor = index.makeIterator();
        cursor.first();
        List<String> found = new ArrayList<>();
        String[] pair;
        while ((pair = cursor.getString()) != null) {
          found.add(pair[0] + ":" + pair[1]);
          cursor.next();
        }
        answer = found;
        break;
      }
      case "edit_distance":
        answer = Utility.editDistanceLev(args[0] == null ? "" : args[0], args[1] == null ? "" : args[1]);
        break;
      case "serialize_int": {
        byte[] data = Utility.serializeInt(Long.parseLong(args[0]));
        answer = hex(data) + "/" + Utility.deserializeInt(data);
        break;
      }
      case "serialize_float": {
        byte[] data = Utility.serializeFloat(Double.parseDouble(args[0]));
        answer = hex(data) + "/" + Utility.deserializeFloat(data);
        break;
      }
      case "hashes": {
        byte[] data = args[0].getBytes(StandardCharsets.UTF_8);
        long buckets = Long.parseLong(args[1]);
        answer = Long.toUnsignedString(Utility.primaryHash(data, 0)) + ","
            + Utility.primaryHash(data, buckets) + "," + Utility.secondaryHash(data, buckets);
        break;
      }
      case "version_format": answer = Utility.getVersion().matches("[0-9]+\\.[0-9]+\\.[0-9]+"); break;
      case "status_string":
        Status.Code given = Status.Code.valueOf(Integer.parseInt(args[0]));
        answer = (args[1] == null ? new Status(given) : new Status(given, args[1])).toString();
        break;
      case "index_contains": answer = index.contains(args[0], args[1]); break;
      case "index_walk": {
        IndexIterator cursor = index.makeIterator();
        List<String> found = new ArrayList<>();
        for (String move : args) {
          String[] parts = move.split("=", 2);
          switch (parts[0]) {
            case "jump":
              String[] at = parts[1].split(":", 2);
              cursor.jump(at[0], at[1]);
              break;
            case "first": cursor.first(); break;
            case "last": cursor.last(); break;
            case "next": cursor.next(); break;
            case "previous": cursor.previous(); break;
            default: throw new IllegalArgumentException("unknown move " + move);
          }
          String[] pair = cursor.getString();
          found.add(pair == null ? "-" : pair[0] + ":" + pair[1]);
        }
        answer = found;
        break;
      }
      case "status_names": {
        List<String> names = new ArrayList<>();
        for (int code = 0; code < Integer.parseInt(args[0]); code++) {
          names.add(Status.Code.valueOf(code).name());
        }
        answer = names;
        break;
      }
      default: throw new IllegalArgumentException("unknown call " + op);
    }
    return new Object[] {status, answer};
  }

  /**
   * Runs the script and prints one line per call.
   *
   * @param argv the script's path and the directory for its files
   * @throws IOException if the script cannot be read
   */
  public static void main(String[] argv) throws IOException {
    String dir = argv[1];
    DBM other = new DBM();
    other.open(dir + "/other.tks", true);
    other.set("k", "from-b");
    other.set("only-b", "1");
    other.close();
    DifferentialDriver driver = new DifferentialDriver(dir);
    for (String raw : Files.readAllLines(Paths.get(argv[0]), StandardCharsets.UTF_8)) {
      String line = raw.trim();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      // "! CALL": kuradb answers differently from the reference on purpose.
      if (line.startsWith("! ")) {
        line = line.substring(2);
      }
      String[] words = line.replace("PATH", dir).split(" ");
      String op = words[0];
      String[] args = Arrays.stream(words, 1, words.length).map(w -> w.equals("-") ? null : w)
          .toArray(String[]::new);
      String shown = op + " " + String.join(" ", Arrays.copyOfRange(words, 1, words.length))
          .replace(dir, "PATH") + " =>";
      Object[] result;
      try {
        result = driver.call(op, args);
      } catch (StatusException | IllegalArgumentException e) {
        // The languages raise differently; that it raised is what compares.
        System.out.println(shown + " RAISES");
        continue;
      }
      System.out.println(shown + " " + ((Status) result[0]).getCode().name() + " " + show(result[1]));
    }
  }
}

package tkrzw;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The differential script's driver for Java's tkrzw layer
 * (bindings/tests/differential): {@code java tkrzw.DifferentialDriver SCRIPT DIR}.
 */
public final class DifferentialDriver {
  private DifferentialDriver() {}

  /**
   * Runs the script and prints one line per call.
   *
   * @param argv the script's path and the directory for its files
   * @throws IOException if the script cannot be read
   */
  public static void main(String[] argv) throws IOException {
    String dir = argv[1];
    DBM dbm = new DBM();
    DBM other = new DBM();
    other.open(dir + "/other.tks", true);
    other.set("k", "from-b");
    other.set("only-b", "1");
    other.close();
    for (String raw : Files.readAllLines(Paths.get(argv[0]), StandardCharsets.UTF_8)) {
      String line = raw.trim();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] words = line.replace("PATH", dir).split(" ");
      String op = words[0];
      String[] args = Arrays.stream(words, 1, words.length).map(w -> w.equals("-") ? null : w)
          .toArray(String[]::new);
      Status status = new Status();
      Object answer = null;
      switch (op) {
        case "open":
          Map<String, String> params = new LinkedHashMap<>();
          for (int i = 2; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            params.put(kv[0], kv[1]);
          }
          status = dbm.open(args[0], args[1].equals("true"), params);
          break;
        case "close": status = dbm.close(); break;
        case "count": answer = dbm.count(); break;
        case "set": status = dbm.set(args[0], args[1], args[2].equals("true")); break;
        case "get": answer = dbm.get(args[0], status); break;
        case "append": status = dbm.append(args[0], args[1], args[2]); break;
        case "increment":
          answer = dbm.increment(args[0], Long.parseLong(args[1]), Long.parseLong(args[2]), status);
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
          Map<String, String> tuning = new LinkedHashMap<>();
          for (String arg : args) {
            String[] kv = arg.split("=", 2);
            tuning.put(kv[0], kv[1]);
          }
          status = dbm.rebuild(tuning);
          answer = dbm.count();
          break;
        case "pop_first":
          String[] record = dbm.popFirstString(status);
          answer = record == null ? null : record[0] + ":" + record[1];
          break;
        default: throw new IllegalArgumentException("unknown call " + op);
      }
      String rest = String.join(" ", Arrays.copyOfRange(words, 1, words.length)).replace(dir, "PATH");
      System.out.println(op + " " + rest + " => " + status.getCode().name() + " "
          + (answer == null ? "-" : answer.toString()));
    }
  }
}

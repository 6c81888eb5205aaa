package tkrzw;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The DBM methods added with AsyncDBM, File and Index: getTimestamp, processFirst, synchronize's parameters. */
class DBMAdditionsTest {
  @TempDir Path dir;

  @Test
  void processFirstShowsTheFirstRecordAndAppliesTheAnswer() {
    DBM dbm = new DBM();
    dbm.open(dir.resolve("casket.tkt").toString(), true).orDie();
    assertEquals(Status.NOT_FOUND_ERROR, dbm.processFirst((k, v) -> RecordProcessor.NOOP, false).getCode());
    dbm.set("b", "2").orDie();
    dbm.set("a", "1").orDie();
    List<String> seen = new ArrayList<>();
    RecordProcessor upper = (k, v) -> {
      seen.add(new String(k, StandardCharsets.UTF_8) + "=" + new String(v, StandardCharsets.UTF_8));
      return "one".getBytes(StandardCharsets.UTF_8);
    };
    assertEquals(Status.SUCCESS, dbm.processFirst(upper, true).getCode());
    assertEquals(List.of("a=1"), seen);
    assertEquals("one", dbm.get("a"));
    assertEquals(Status.SUCCESS, dbm.processFirst((k, v) -> RecordProcessor.REMOVE, true).getCode());
    assertNull(dbm.get("a"));
    assertEquals(1, dbm.count());
    dbm.close().orDie();
  }

  @Test
  void synchronizeAppliesASkipDatabasesReducer() {
    DBM dbm = new DBM();
    dbm.open(dir.resolve("casket.tks").toString(), true, "truncate=true").orDie();
    dbm.set("a", "1").orDie();
    dbm.set("a", "2").orDie();
    dbm.set("b", "3").orDie();
    assertEquals(Status.SUCCESS, dbm.synchronize(false, Map.of("reducer", "ReduceConcat")).getCode());
    assertEquals("12", dbm.get("a"), "the records of a were concatenated");
    assertEquals(2, dbm.count());
    DBM other = new DBM();
    other.open(dir.resolve("other.tks").toString(), true, "truncate=true").orDie();
    other.set("m", "merged").orDie();
    other.close().orDie();
    assertEquals(Status.SUCCESS, dbm.synchronize(false,
        Map.of("merge", dir.resolve("other.tks").toString(), "reducer", "ReduceToLast")).getCode());
    assertEquals("merged", dbm.get("m"), "the other database's records were merged");
    assertEquals(3, dbm.count());
    assertEquals(Status.INVALID_ARGUMENT_ERROR,
        dbm.synchronize(false, Map.of("reducer", "ReduceToNothing")).getCode());
    assertEquals(Status.INVALID_ARGUMENT_ERROR,
        dbm.synchronize(false, Map.of("make_everything", "1")).getCode());
    dbm.close().orDie();

    DBM hash = new DBM();
    hash.open(dir.resolve("casket.tkh").toString(), true).orDie();
    hash.set("a", "1").orDie();
    assertEquals(Status.SUCCESS, hash.synchronize(true, Map.of("reducer", "ReduceToFirst")).getCode(),
        "other classes ignore the reducer, as the reference's do");
    hash.close().orDie();
  }

  @Test
  void getTimestampIsTheFilesModificationTime() {
    DBM dbm = new DBM();
    dbm.open(dir.resolve("casket.tkh").toString(), true).orDie();
    dbm.set("a", "1").orDie();
    dbm.synchronize(false).orDie();
    double now = System.currentTimeMillis() / 1000.0;
    double stamp = dbm.getTimestamp();
    assertTrue(Math.abs(now - stamp) < 600, "timestamp " + stamp + " is not about now " + now);
    dbm.close().orDie();
    assertThrows(IllegalArgumentException.class, dbm::getTimestamp, "not open");
  }

  @Test
  void processMultiTakesAnArrayAsTheReferencesExamplesPassIt() {
    DBM dbm = new DBM();
    dbm.open(dir.resolve("casket.tkh").toString(), true).orDie();
    RecordProcessor.WithKey[] ops = {
      new RecordProcessor.WithKey("doc-4", (k, v) -> "Tokyo Go!".getBytes(StandardCharsets.UTF_8)),
      new RecordProcessor.WithKey("doc-5", (k, v) -> "Japan Go!".getBytes(StandardCharsets.UTF_8)),
    };
    assertEquals(Status.SUCCESS, dbm.processMulti(ops, true).getCode());
    assertEquals("Tokyo Go!", dbm.get("doc-4"));
    assertEquals("Japan Go!", dbm.get("doc-5"));
    dbm.close().orDie();
  }

  /** Another key_comparator on reopen is ignored, as the reference does; io.kuradb.Dbm refuses it. */
  @Test
  void reopeningATreeWithAnotherComparatorKeepsTheFilesOrder() {
    String path = dir.resolve("order.tkt").toString();
    DBM dbm = new DBM();
    dbm.open(path, true, Map.of("key_comparator", "DecimalKeyComparator")).orDie();
    for (String key : List.of("10", "9", "100")) {
      dbm.set(key, "v").orDie();
    }
    dbm.close().orDie();
    DBM reopened = new DBM();
    reopened.open(path, true, Map.of("key_comparator", "LexicalKeyComparator")).orDie();
    Iterator iter = reopened.makeIterator();
    iter.first().orDie();
    assertEquals("9", iter.getKeyString());
    iter.destruct();
    reopened.close().orDie();
    assertThrows(io.kuradb.KuraException.class,
        () -> io.kuradb.Dbm.open(path, true, Map.of("key_comparator", "LexicalKeyComparator")));
  }
}

package tkrzw;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TkrzwTest {
  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private DBM open(String name, String params) {
    DBM dbm = new DBM();
    dbm.open(dir.resolve(name).toString(), true, params).orDie();
    return dbm;
  }

  @Test
  void statusCodesAndNamesAreTheReferences() {
    String[] names = {"SUCCESS", "UNKNOWN_ERROR", "SYSTEM_ERROR", "NOT_IMPLEMENTED_ERROR",
        "PRECONDITION_ERROR", "INVALID_ARGUMENT_ERROR", "CANCELED_ERROR", "NOT_FOUND_ERROR",
        "PERMISSION_ERROR", "INFEASIBLE_ERROR", "DUPLICATION_ERROR", "BROKEN_DATA_ERROR",
        "NETWORK_ERROR", "APPLICATION_ERROR"};
    for (int i = 0; i < names.length; i++) {
      Status.Code code = Status.Code.valueOf(names[i]);
      assertEquals(i, code.getNumber());
    }
    assertEquals(names.length, Status.Code.values().length);
    Status s = new Status(Status.NOT_FOUND_ERROR, "no key");
    assertEquals("NOT_FOUND_ERROR: no key", s.toString());
    assertEquals("SUCCESS", new Status().toString());
    assertTrue(s.equals(Status.NOT_FOUND_ERROR));
    assertFalse(s.isOK());
    StatusException e = assertThrows(StatusException.class, s::orDie);
    assertEquals(Status.NOT_FOUND_ERROR, e.getStatus().getCode());
    new Status().orDie();
    Status joined = new Status();
    joined.join(s);
    joined.join(new Status(Status.SYSTEM_ERROR));
    assertEquals(Status.NOT_FOUND_ERROR, joined.getCode());
  }

  @Test
  void basicOperationsAnswerTheReferencesStatuses() {
    DBM dbm = open("casket.tkh", "num_buckets=100,concurrent=true");
    assertEquals(Status.SUCCESS, dbm.set("one", "first").getCode());
    assertEquals(Status.DUPLICATION_ERROR, dbm.set("one", "again", false).getCode());
    assertEquals("first", dbm.get("one"));
    Status status = new Status();
    assertNull(dbm.get("two", status));
    assertEquals(Status.NOT_FOUND_ERROR, status.getCode());
    assertEquals(Status.NOT_FOUND_ERROR, dbm.remove("two").getCode());
    assertEquals(Status.SUCCESS, dbm.append("one", "x", ":").getCode());
    assertEquals("first:x", dbm.get("one"));
    assertEquals(10, dbm.increment("n", 10, 0, status));
    assertTrue(status.isOK());
    // As the reference: "first:x" counts from its first 8 bytes, big-endian.
    long head = java.nio.ByteBuffer.wrap("first:x\0".getBytes(java.nio.charset.StandardCharsets.UTF_8)).getLong();
    assertEquals(head >> 8, dbm.increment("one", Long.MIN_VALUE, 0, status));
    assertEquals("first:x", dbm.get("one"));
    assertEquals((head >> 8) + 1, dbm.increment("one", 1, 0, status));
    assertTrue(status.isOK());
    assertEquals(8, dbm.get("one".getBytes(java.nio.charset.StandardCharsets.UTF_8)).length);
    assertTrue(dbm.contains("one"));
    assertEquals(2, dbm.count());
    // As the reference's: opening an open DBM throws.
    IllegalArgumentException opened = assertThrows(IllegalArgumentException.class,
        () -> dbm.open(dir.resolve("other.tkh").toString(), true));
    assertEquals("opened database", opened.getMessage());
    assertEquals(Status.SUCCESS, dbm.close().getCode());
    // As the reference's: closing a closed DBM throws, as any other use does.
    IllegalArgumentException closed = assertThrows(IllegalArgumentException.class, dbm::close);
    assertEquals("not opened database", closed.getMessage());
    assertThrows(IllegalArgumentException.class, () -> dbm.get("one"));
    dbm.destruct();
  }

  @Test
  void compareExchangeWithAnyData() {
    DBM dbm = open("cx.tkh", "");
    assertEquals(Status.SUCCESS, dbm.compareExchange("k", null, "v1").getCode());
    assertEquals(Status.INFEASIBLE_ERROR, dbm.compareExchange("k", null, "v2").getCode());
    assertEquals(Status.SUCCESS, dbm.compareExchange("k", DBM.ANY_STRING, "v3").getCode());
    Status.And<String> r = dbm.compareExchangeAndGet("k", DBM.ANY_STRING, DBM.ANY_STRING);
    assertEquals(Status.SUCCESS, r.status.getCode());
    assertEquals("v3", r.value);
    assertEquals(Status.SUCCESS, dbm.compareExchange(b("k"), DBM.ANY_BYTES, null).getCode());
    assertFalse(dbm.contains("k"));
    Map<String, String> expected = new LinkedHashMap<>();
    expected.put("a", null);
    Map<String, String> desired = new LinkedHashMap<>();
    desired.put("a", "1");
    desired.put("b", "2");
    assertEquals(Status.SUCCESS, dbm.compareExchangeMultiString(expected, desired).getCode());
    assertEquals(Status.INFEASIBLE_ERROR, dbm.compareExchangeMultiString(expected, desired).getCode());
    expected.put("a", DBM.ANY_STRING);
    desired.put("a", null);
    assertEquals(Status.SUCCESS, dbm.compareExchangeMultiString(expected, desired).getCode());
    assertFalse(dbm.contains("a"));
    dbm.close().orDie();
  }

  @Test
  void multiAndQueueMethods() {
    DBM dbm = open("multi.tkt", "");
    Map<String, String> records = new LinkedHashMap<>();
    records.put("a", "1");
    records.put("b", "2");
    dbm.setMultiString(records, true).orDie();
    assertEquals(records, dbm.getMulti(new String[] {"a", "b", "c"}));
    assertEquals(Status.DUPLICATION_ERROR, dbm.setMultiString(records, false).getCode());
    Status.And<String> old = dbm.setAndGet("a", "10", true);
    assertEquals("1", old.value);
    assertEquals("10", dbm.removeAndGet("a").value);
    assertEquals(Status.NOT_FOUND_ERROR, dbm.removeAndGet("a").status.getCode());
    dbm.rekey("b", "z", true, false).orDie();
    assertEquals(Status.NOT_FOUND_ERROR, dbm.rekey("b", "y", true, false).getCode());
    assertEquals(Status.NOT_FOUND_ERROR, dbm.removeMulti(new String[] {"z", "nope"}).getCode());
    dbm.pushLast("first", 1000).orDie();
    dbm.pushLast("second", 2000).orDie();
    assertEquals("first", dbm.popFirstString()[1]);
    assertEquals("second", dbm.popFirstString()[1]);
    Status status = new Status();
    assertNull(dbm.popFirst(status));
    assertEquals(Status.NOT_FOUND_ERROR, status.getCode());
    dbm.close().orDie();
  }

  @Test
  void processorsFollowTheReferencesConventions() {
    DBM dbm = open("proc.tkh", "");
    dbm.process("k", (k, v) -> {
      assertNull(v);
      return b("v");
    }, true).orDie();
    dbm.process("k", (k, v) -> RecordProcessor.NOOP, true).orDie();
    assertEquals("v", dbm.get("k"));
    dbm.set("j", "w").orDie();
    List<RecordProcessor.WithKey> pairs = new ArrayList<>();
    pairs.add(new RecordProcessor.WithKey("k", (k, v) -> RecordProcessor.REMOVE));
    pairs.add(new RecordProcessor.WithKey("j", (k, v) -> b(new String(v, StandardCharsets.UTF_8) + "!")));
    dbm.processMulti(pairs, true).orDie();
    assertFalse(dbm.contains("k"));
    assertEquals("w!", dbm.get("j"));
    List<String> seen = new ArrayList<>();
    dbm.processEach((k, v) -> {
      seen.add(k == null ? "(null)" : new String(k, StandardCharsets.UTF_8));
      return RecordProcessor.NOOP;
    }, false).orDie();
    assertEquals(List.of("(null)", "j", "(null)"), seen);
    assertThrows(UnsupportedOperationException.class, () -> dbm.process("j", (k, v) -> {
      throw new UnsupportedOperationException("no");
    }, true));
    assertEquals("w!", dbm.get("j"));
    dbm.close().orDie();
  }

  @Test
  void inspectAndToStringNameTheReferencesClasses() {
    DBM hash = open("c.tkh", "");
    assertEquals("HashDBM", hash.inspect().get("class"));
    assertTrue(hash.toString().contains("class=HashDBM"), hash.toString());
    hash.close().orDie();
    DBM tree = open("c.tkt", "");
    assertEquals("TreeDBM", tree.inspect().get("class"));
    assertTrue(tree.isOrdered());
    assertTrue(tree.isWritable());
    tree.close().orDie();
    DBM skip = new DBM();
    skip.open(dir.resolve("d.data").toString(), true, Map.of("dbm", "SkipDBM")).orDie();
    assertEquals("SkipDBM", skip.inspect().get("class"));
    skip.close().orDie();
    assertEquals("tkrzw.DBM(unopened)", new DBM().toString());
    // The reference's format: the path C-escaped, the count as "count".
    String odd = dir.resolve("tab\tand\\back.tkh").toString();
    DBM named = new DBM();
    named.open(odd, true).orDie();
    named.set("k", "v").orDie();
    String escaped = odd.replace("\\", "\\\\").replace("\t", "\\t");
    assertEquals("tkrzw.DBM(class=HashDBM, path=" + escaped + ", count=1)", named.toString());
    named.close().orDie();
  }

  @Test
  void iteratorWalksAndEdits() {
    DBM dbm = open("it.tkt", "");
    for (String k : new String[] {"b", "a", "c"}) {
      dbm.set(k, k + k).orDie();
    }
    Iterator it = dbm.makeIterator();
    it.first().orDie();
    List<String> keys = new ArrayList<>();
    String[] record;
    while ((record = it.getString()) != null) {
      keys.add(record[0]);
      it.next().orDie();
    }
    assertEquals(List.of("a", "b", "c"), keys);
    Status status = new Status();
    assertNull(it.get(status));
    assertEquals(Status.NOT_FOUND_ERROR, status.getCode());
    it.jump("b").orDie();
    assertEquals("bb", it.getValueString());
    it.set("BB").orDie();
    it.last().orDie();
    assertEquals("c", it.getKeyString());
    it.jumpLower("c", false).orDie();
    assertEquals("b", it.getKeyString());
    it.remove().orDie();
    it.destruct();
    assertEquals(Status.INFEASIBLE_ERROR, it.first().getCode());
    assertEquals(2, dbm.count());
    dbm.close().orDie();
  }

  @Test
  void flatRecordsRoundTripAndRestore() {
    DBM dbm = open("src.tkh", "");
    for (int i = 0; i < 50; i++) {
      dbm.set("k" + i, "v" + i).orDie();
    }
    String flat = dir.resolve("records.flat").toString();
    dbm.exportToFlatRecords(flat).orDie();
    DBM copy = open("dst.tkt", "");
    copy.importFromFlatRecords(flat).orDie();
    assertEquals(50, copy.count());
    DBM exported = open("exp.tkh", "");
    dbm.export(exported).orDie();
    assertEquals(50, exported.count());
    dbm.close().orDie();
    copy.close().orDie();
    exported.close().orDie();
    String restored = dir.resolve("restored.tkh").toString();
    DBM.restoreDatabase(dir.resolve("src.tkh").toString(), restored, "", -1).orDie();
    DBM check = new DBM();
    check.open(restored, false).orDie();
    assertEquals("v7", check.get("k7"));
    check.close().orDie();
    // A positive end offset: an appending hash file as it was at that size.
    DBM log = new DBM();
    log.open(dir.resolve("log.tkh").toString(), true, Map.of("update_mode", "UPDATE_APPENDING")).orDie();
    log.set("k", "first").orDie();
    log.set("gone", "later").orDie();
    log.synchronize(false).orDie();
    long then = log.getFileSize();
    log.set("k", "second").orDie();
    log.remove("gone").orDie();
    log.close().orDie();
    String past = dir.resolve("then.tkh").toString();
    DBM.restoreDatabase(dir.resolve("log.tkh").toString(), past, "", then).orDie();
    DBM pastDb = new DBM();
    pastDb.open(past, false).orDie();
    assertEquals("first", pastDb.get("k"));
    assertEquals("later", pastDb.get("gone"));
    pastDb.close().orDie();
    assertEquals(Status.INVALID_ARGUMENT_ERROR,
        DBM.restoreDatabase(dir.resolve("log.tkh").toString(), dir.resolve("t.tkt").toString(), "TreeDBM", 100).getCode());
  }

  @Test
  void utilityHashesAreTheReferencesBitForBit() {
    // Figures from python3-tkrzw 1.0.25's Utility.PrimaryHash / SecondaryHash.
    assertEquals(Long.parseUnsignedLong("6174749910581742733"), Utility.primaryHash(new byte[0], 0));
    assertEquals(Long.parseUnsignedLong("16973900370012003622"), Utility.primaryHash(b("abc"), 0));
    assertEquals(121, Utility.primaryHash(b("hello world"), 1000));
    assertEquals(Long.parseUnsignedLong("14695981039346656037"), Utility.secondaryHash(new byte[0], 0));
    assertEquals(1765794342254572867L, Utility.secondaryHash(b("abc"), 0));
    assertEquals(400, Utility.secondaryHash(b("hello world"), 1000));
    assertEquals(3, Utility.editDistanceLev("kitten", "sitting"));
    assertEquals(1, Utility.editDistanceLev("あいう", "あえう"));
    assertTrue(Utility.getMemoryCapacity() > 0);
    assertTrue(Utility.getMemoryUsage() > 0);
    assertFalse(Utility.getVersion().isEmpty());
    assertEquals(Map.of("a", "1", "b", "x=y"), Utility.parseParams("a=1, b=x=y,,junk"));
  }

  @Test
  void misuseGivesStatusesOrExceptionsNotCrashes() {
    DBM dbm = new DBM();
    assertThrows(IllegalArgumentException.class, () -> dbm.set("k", "v"));
    assertEquals(Status.INVALID_ARGUMENT_ERROR,
        dbm.open(dir.resolve("x.tkh").toString(), true, "bogus_param=1").getCode());
    assertEquals(Status.NOT_FOUND_ERROR,
        dbm.open(dir.resolve("nope.tkh").toString(), false).getCode());
    dbm.open(dir.resolve("y.tkh").toString(), true).orDie();
    assertThrows(NullPointerException.class, () -> dbm.set((byte[]) null, b("v")));
    assertThrows(NullPointerException.class, () -> dbm.get((String) null));
    dbm.close().orDie();
    DBM reader = new DBM();
    reader.open(dir.resolve("y.tkh").toString(), false).orDie();
    assertEquals(Status.PRECONDITION_ERROR, reader.set("k", "v").getCode());
    reader.close().orDie();
  }

  @Test
  void aProgramWrittenForTheReferenceRuns() throws Exception {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    java.io.PrintStream saved = System.out;
    System.setOut(new java.io.PrintStream(out, true, StandardCharsets.UTF_8));
    try {
      ReferenceExample.main(new String[] {dir.resolve("casket.tkh").toString()});
    } finally {
      System.setOut(saved);
    }
    assertEquals("hop\nstep\njump\nnull\nfirst: hop\nsecond: step\nthird: jump\n",
        sortTail(out.toString(StandardCharsets.UTF_8)));
  }

  /** The hash database's order is not the insertion order: sorts the listed records. */
  private static String sortTail(String text) {
    String[] lines = text.split("\n");
    List<String> head = new ArrayList<>(List.of(lines).subList(0, 4));
    List<String> tail = new ArrayList<>(List.of(lines).subList(4, lines.length));
    tail.sort(String::compareTo);
    head.addAll(tail);
    return String.join("\n", head) + "\n";
  }
}

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

class AsyncDBMTest {
  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private DBM open(String name) {
    DBM dbm = new DBM();
    dbm.open(dir.resolve(name).toString(), true, "num_buckets=100").orDie();
    return dbm;
  }

  private static Map<String, String> map(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  @Test
  void singleRecordOperationsAnswerTheReferencesFutures() {
    DBM dbm = open("casket.tkh");
    AsyncDBM async = new AsyncDBM(dbm, 4);
    assertTrue(async.toString().contains("AsyncDBM"));
    Future<Status> future = async.set("one", "hop", true);
    assertTrue(future.toString().contains("Future"));
    assertTrue(future.await(-1));
    assertEquals(Status.SUCCESS, future.get().getCode());
    assertEquals(Status.SUCCESS, future.get().getCode(), "a second get answers the same");
    assertEquals(Status.DUPLICATION_ERROR, async.set("one", "again", false).get().getCode());
    assertEquals(Status.SUCCESS, async.append(b("one"), b("1"), b(":")).get().getCode());
    Status.And<String> text = async.get("one").get();
    assertEquals(Status.SUCCESS, text.status.getCode());
    assertEquals("hop:1", text.value);
    Status.And<byte[]> raw = async.get(b("none")).get();
    assertEquals(Status.NOT_FOUND_ERROR, raw.status.getCode());
    assertNull(raw.value);
    assertEquals(Status.SUCCESS, async.remove("one").get().getCode());
    assertEquals(Status.NOT_FOUND_ERROR, async.remove("one").get().getCode());
    assertEquals(Status.SUCCESS, async.compareExchange("japan", null, "tokyo").get().getCode());
    assertEquals(Status.INFEASIBLE_ERROR, async.compareExchange("japan", "osaka", "kyoto").get().getCode());
    assertEquals(Status.SUCCESS, async.compareExchange("japan", "tokyo", "kyoto").get().getCode());
    assertEquals("kyoto", dbm.get("japan"));
    Status.And<Long> n = async.increment("num", 5, 100).get();
    assertEquals(Status.SUCCESS, n.status.getCode());
    assertEquals(105L, n.value.longValue());
    assertEquals(110L, async.increment(b("num"), 5, 100).get().value.longValue());
    // As the reference: a value not 8 bytes long counts from its big-endian bytes.
    assertEquals(Status.SUCCESS, async.set(b("short"), new byte[] {1, 0}, true).get().getCode());
    assertEquals(257L, async.increment("short", 1, 0).get().value.longValue());
    assertEquals(Status.SUCCESS, async.remove("short").get().getCode());
    async.destruct();
    assertEquals(Status.SUCCESS, dbm.close().getCode());
  }

  @Test
  void multiOperationsAndSearch() {
    DBM dbm = open("casket.tkh");
    AsyncDBM async = new AsyncDBM(dbm, 2);
    assertEquals(Status.SUCCESS,
        async.setMultiStr(map("one", "hop", "two", "step", "three", "jump"), false).get().getCode());
    assertEquals(Status.DUPLICATION_ERROR, async.setMultiStr(map("one", "x"), false).get().getCode());
    // As the reference: the records that exist stay and the absent ones are set.
    assertEquals(Status.DUPLICATION_ERROR,
        async.setMultiStr(map("one", "x", "four", "hop"), false).get().getCode());
    assertEquals("hop", dbm.get("one"));
    assertEquals("hop", dbm.get("four"));
    assertEquals(Status.SUCCESS, async.remove("four").get().getCode());
    assertEquals(Status.SUCCESS, async.appendMulti(map("one", "1", "two", "2"), ":").get().getCode());
    Status.And<Map<String, String>> got = async.getMulti(new String[] {"one", "two", "none"}).get();
    assertEquals(map("one", "hop:1", "two", "step:2"), got.value);
    Map<byte[], byte[]> raw = async.getMulti(new byte[][] {b("three")}).get().value;
    assertEquals(1, raw.size());
    assertArrayEquals(b("jump"), raw.values().iterator().next());
    Status.And<String[]> found = async.search("begin", "t", 0).get();
    assertEquals(2, found.value.length);
    assertEquals(1, async.search("contain", b("hre"), 0).get().value.length);
    assertEquals(Status.INVALID_ARGUMENT_ERROR, async.search("nomode", "t", 0).get().status.getCode());
    assertEquals(Status.NOT_FOUND_ERROR, async.removeMulti(new String[] {"one", "none"}).get().getCode());
    assertEquals(Status.SUCCESS, async.removeMulti(new String[] {"two", "three"}).get().getCode());
    assertEquals(0, dbm.count());
    Map<String, String> absent = new LinkedHashMap<>();
    absent.put("a", null);
    assertEquals(Status.SUCCESS, async.compareExchangeMultiStr(absent, map("a", "1")).get().getCode());
    assertEquals(Status.INFEASIBLE_ERROR, async.compareExchangeMultiStr(absent, map("a", "2")).get().getCode());
    assertEquals("1", dbm.get("a"));
    async.destruct();
    dbm.close().orDie();
  }

  @Test
  void housekeepingExportAndFlatRecords() {
    DBM dbm = open("casket.tkh");
    AsyncDBM async = new AsyncDBM(dbm, 4);
    dbm.set("tako", "ika").orDie();
    assertEquals(Status.SUCCESS, async.rebuild().get().getCode());
    assertEquals(Status.SUCCESS, async.synchronize(false).get().getCode());
    assertEquals(Status.INVALID_ARGUMENT_ERROR,
        async.synchronize(false, map("no_such", "1")).get().getCode());
    String copy = dir.resolve("copy.tkh").toString();
    assertEquals(Status.SUCCESS, async.copyFileData(copy, false).get().getCode());
    DBM copyDbm = new DBM();
    copyDbm.open(copy, true).orDie();
    assertEquals(1, copyDbm.count());
    copyDbm.clear().orDie();
    assertEquals(Status.SUCCESS, async.export(copyDbm).get().getCode());
    assertEquals("ika", copyDbm.get("tako"));
    copyDbm.close().orDie();
    File file = new File();
    file.open(dir.resolve("flat.dat").toString(), true, "truncate=true").orDie();
    assertEquals(Status.SUCCESS, async.exportToFlatRecords(file).get().getCode());
    assertEquals(Status.SUCCESS, async.clear().get().getCode());
    assertEquals(0, dbm.count());
    assertEquals(Status.SUCCESS, async.importFromFlatRecords(file).get().getCode());
    assertEquals("ika", dbm.get("tako"));
    file.close().orDie();
    async.destruct();
    dbm.close().orDie();
  }

  @Test
  void destructDrainsTheQueueAndRefusesLaterOperations() {
    DBM dbm = open("casket.tkh");
    AsyncDBM async = new AsyncDBM(dbm, 3);
    List<Future<Status>> sets = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      sets.add(async.set("k" + i, "v" + i));
    }
    assertEquals(Status.INFEASIBLE_ERROR, dbm.close().getCode(), "an AsyncDBM still uses it");
    DBM again = open("casket2.tkh");
    AsyncDBM second = new AsyncDBM(again, 2);
    for (int i = 0; i < 300; i++) {
      second.set("k" + i, "v" + i);
    }
    second.destruct();
    assertEquals(300, again.count(), "destruct waited for every queued set");
    assertEquals(Status.INFEASIBLE_ERROR, second.set("late", "x").get().getCode());
    assertTrue(second.toString().contains("destructed"));
    assertEquals(Status.SUCCESS, again.close().getCode());
    for (Future<Status> f : sets) {
      f.get();
    }
    async.destruct();
  }

  @Test
  void misuseThrowsOrAnswersAStatusWithoutCrashing() {
    DBM closed = new DBM();
    assertThrows(IllegalArgumentException.class, () -> new AsyncDBM(closed, 2));
    DBM dbm = open("casket.tkh");
    StatusException e = assertThrows(StatusException.class, () -> new AsyncDBM(dbm, 0));
    assertEquals(Status.INVALID_ARGUMENT_ERROR, e.getStatus().getCode());
    AsyncDBM async = new AsyncDBM(dbm, 1);
    assertThrows(NullPointerException.class, () -> async.get((byte[]) null));
    Future<Status> f = async.set("k", "v");
    f.destruct();
    assertEquals(Status.CANCELED_ERROR, f.get().getCode());
    File unopened = new File();
    assertEquals(Status.PRECONDITION_ERROR, async.exportToFlatRecords(unopened).get().getCode());
    async.destruct();
    async.destruct();
    assertFalse(async.get("k").get().status.isOK());
    dbm.close().orDie();
  }

  @Test
  void threadsQueueAtOnce() throws Exception {
    DBM dbm = open("casket.tkh");
    AsyncDBM async = new AsyncDBM(dbm, 4);
    Thread[] threads = new Thread[4];
    for (int t = 0; t < threads.length; t++) {
      int id = t;
      threads[t] = new Thread(() -> {
        for (int i = 0; i < 200; i++) {
          async.set(id + ":" + i, "v").get().orDie();
        }
      });
      threads[t].start();
    }
    for (Thread t : threads) {
      t.join();
    }
    assertEquals(800, dbm.count());
    async.destruct();
    dbm.close().orDie();
  }

  @Test
  void theReferencesAsyncExampleRuns() {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    java.io.PrintStream saved = System.out;
    System.setOut(new java.io.PrintStream(out, true, StandardCharsets.UTF_8));
    try {
      ReferenceAsyncExample.main(new String[] {dir.resolve("casket.tkh").toString()});
    } finally {
      System.setOut(saved);
    }
    assertEquals("Setting a record\nGetting a record\nVALUE: world\n", out.toString(StandardCharsets.UTF_8));
  }
}

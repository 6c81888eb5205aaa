package tkrzw;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The calls of the reference's current Java release that programs written for it make. */
class CompatCallsTest {
  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static Map<String, String> map(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  @Test
  void pageSizeIsThePlatformsPage() {
    assertTrue(Utility.PAGE_SIZE >= 4096, "PAGE_SIZE " + Utility.PAGE_SIZE);
    assertEquals(0, Utility.PAGE_SIZE & (Utility.PAGE_SIZE - 1), "a power of two");
  }

  @Test
  void parseParamsAnswersAHashMapInOrder() {
    HashMap<String, String> params = Utility.parseParams("num_buckets=10,dbm=HashDBM");
    assertEquals(java.util.List.of("num_buckets", "dbm"), new java.util.ArrayList<>(params.keySet()));
  }

  @Test
  void asyncQueueCallsPopPushAndRekey() {
    DBM dbm = new DBM();
    dbm.open(dir.resolve("q.tkt").toString(), true).orDie();
    AsyncDBM async = new AsyncDBM(dbm, 2);
    Status.And<byte[][]> empty = async.popFirst().get();
    assertEquals(Status.NOT_FOUND_ERROR, empty.status.getCode());
    assertNull(empty.value);
    assertEquals(Status.NOT_FOUND_ERROR, async.popFirstString().get().status.getCode());
    assertEquals(Status.SUCCESS, async.pushLast("first", 1.0).get().getCode());
    assertEquals(Status.SUCCESS, async.pushLast(b("second"), 2.0).get().getCode());
    Status.And<byte[][]> popped = async.popFirst().get();
    assertEquals(Status.SUCCESS, popped.status.getCode());
    assertEquals(8, popped.value[0].length, "the key is the time, 8 bytes big-endian");
    assertArrayEquals(b("first"), popped.value[1]);
    Status.And<String[]> text = async.popFirstString().get();
    assertEquals("second", text.value[1]);
    assertEquals(Status.SUCCESS, async.pushLast("now", -1).get().getCode());
    assertEquals(1, dbm.count());

    dbm.clear().orDie();
    dbm.set("a", "1").orDie();
    dbm.set("b", "2").orDie();
    assertEquals(Status.SUCCESS, async.rekey("a", "c", true, false).get().getCode());
    assertNull(dbm.get("a"));
    assertEquals("1", dbm.get("c"));
    assertEquals(Status.DUPLICATION_ERROR, async.rekey("c", "b", false, false).get().getCode());
    assertEquals(Status.SUCCESS, async.rekey(b("c"), b("d"), false, true).get().getCode());
    assertEquals("1", dbm.get("c"));
    assertEquals("1", dbm.get("d"));
    assertEquals(Status.NOT_FOUND_ERROR, async.rekey("none", "x", true, false).get().getCode());
    async.destruct();
    dbm.close().orDie();
  }

  @Test
  void asyncStringMultiCallsByTheCurrentNames() {
    DBM dbm = new DBM();
    dbm.open("", true).orDie();
    AsyncDBM async = new AsyncDBM(dbm, 1);
    assertEquals(Status.SUCCESS, async.setMultiString(map("a", "1", "b", "2"), true).get().getCode());
    assertEquals(Status.DUPLICATION_ERROR, async.setMultiString(map("a", "x"), false).get().getCode());
    assertEquals("1", dbm.get("a"));
    Map<String, String> expected = map("a", "1", "z", null);
    Map<String, String> desired = map("a", null, "z", "26");
    assertEquals(Status.SUCCESS, async.compareExchangeMultiString(expected, desired).get().getCode());
    assertNull(dbm.get("a"));
    assertEquals("26", dbm.get("z"));
    assertEquals(Status.INFEASIBLE_ERROR,
        async.compareExchangeMultiString(map("a", "1"), map("a", "2")).get().getCode());
    async.destruct();
    dbm.close().orDie();
  }

  @Test
  void iteratorStepStringAndPopFirstTakeAStatus() {
    DBM dbm = new DBM();
    dbm.open("", true, "dbm=BabyDBM").orDie();
    dbm.set("a", "1").orDie();
    dbm.set("b", "2").orDie();
    Iterator iter = dbm.makeIterator();
    iter.first().orDie();
    Status status = new Status();
    assertArrayEquals(new String[] {"a", "1"}, iter.stepString(status));
    assertEquals(Status.SUCCESS, status.getCode());
    assertArrayEquals(new String[] {"b", "2"}, iter.stepString(status));
    assertNull(iter.stepString(status));
    assertEquals(Status.NOT_FOUND_ERROR, status.getCode());
    assertArrayEquals(new String[] {"a", "1"}, iter.popFirstString(status));
    assertEquals(Status.SUCCESS, status.getCode());
    byte[][] record = iter.popFirst();
    assertArrayEquals(b("b"), record[0]);
    assertNull(iter.popFirst(status));
    assertEquals(Status.NOT_FOUND_ERROR, status.getCode());
    assertNull(iter.popFirstString());
    iter.destruct();
    dbm.close().orDie();
  }

  @Test
  void restoreDatabaseTakesTheClassAndEndOffset() throws Exception {
    String old = dir.resolve("old.tkh").toString();
    DBM dbm = new DBM();
    dbm.open(old, true).orDie();
    dbm.set("k", "v").orDie();
    dbm.close().orDie();
    String restored = dir.resolve("new.tkh").toString();
    assertEquals(Status.SUCCESS, DBM.restoreDatabase(old, restored, "", -1).getCode());
    String named = dir.resolve("named.data").toString();
    assertEquals(Status.SUCCESS, DBM.restoreDatabase(old, named, "HashDBM", 0).getCode());
    assertEquals(Status.PRECONDITION_ERROR, DBM.restoreDatabase(old, restored, null, -1).getCode());
    dbm.open(restored, false).orDie();
    assertEquals("v", dbm.get("k"));
    dbm.close().orDie();
    assertTrue(Files.size(Path.of(named)) > 0);
  }

  @Test
  void aRebuildTakesTheRunningTuningOfAHash() {
    DBM dbm = new DBM();
    dbm.open(dir.resolve("h.tkh").toString(), true, "num_buckets=10").orDie();
    dbm.set("k", "v").orDie();
    assertEquals(Status.SUCCESS, dbm.rebuild(map("fbp_capacity", "100", "num_buckets", "100")).getCode());
    AsyncDBM async = new AsyncDBM(dbm, 1);
    assertEquals(Status.SUCCESS, async.rebuild(map("min_read_size", "64")).get().getCode());
    async.destruct();
    assertEquals("v", dbm.get("k"));
    dbm.close().orDie();
  }

  /** A tree file whose extension does not say so still keeps its own order when reopened. */
  @Test
  void aReopenedTreeKeepsItsOrderWhateverItsName() {
    String path = dir.resolve("numbers.data").toString();
    DBM dbm = new DBM();
    dbm.open(path, true, map("dbm", "TreeDBM", "key_comparator", "DecimalKeyComparator")).orDie();
    dbm.set("10", "ten").orDie();
    dbm.set("9", "nine").orDie();
    dbm.close().orDie();
    dbm.open(path, true, map("key_comparator", "LexicalKeyComparator")).orDie();
    Iterator iter = dbm.makeIterator();
    iter.first().orDie();
    assertEquals("9", iter.getKeyString(), "decimal order, from the file");
    iter.destruct();
    dbm.close().orDie();
  }

  @Test
  void openTakesNoCreateAndSyncHard() {
    String name = dir.resolve("o.tkh").toString();
    DBM dbm = new DBM();
    assertEquals(Status.NOT_FOUND_ERROR, dbm.open(name, true, map("no_create", "true")).getCode());
    assertTrue(!dbm.isOpen() && !Files.exists(dir.resolve("o.tkh")), "nothing made");
    assertEquals(Status.INVALID_ARGUMENT_ERROR, dbm.open(name, true, map("sync_hard", "maybe")).getCode());
    assertEquals(Status.SUCCESS, dbm.open(name, true, "sync_hard=true").getCode());
    dbm.set("k", "v").orDie();
    assertEquals(Status.SUCCESS, dbm.close().getCode());
    assertEquals(Status.SUCCESS, dbm.open(name, false, map("no_create", "true", "sync_hard", "true")).getCode());
    assertEquals("v", dbm.get("k"));
    assertEquals(Status.SUCCESS, dbm.close().getCode());
    assertEquals(Status.SUCCESS, dbm.open("", true, map("no_create", "true")).getCode());
    dbm.close().orDie();
  }

  @Test
  void lockMemBucketsIsTaken() {
    DBM dbm = new DBM();
    String params = "update_mode=UPDATE_APPENDING,num_buckets=100,fbp_capacity=64,lock_mem_buckets=true";
    assertEquals(Status.SUCCESS, dbm.open(dir.resolve("l.tkh").toString(), true, params).getCode());
    dbm.set("k", "v").orDie();
    assertEquals(Status.SUCCESS, dbm.rebuild(map("lock_mem_buckets", "true")).getCode());
    dbm.close().orDie();
    String shards = "num_shards=4,dbm=hash,num_buckets=100,lock_mem_buckets=false";
    assertEquals(Status.SUCCESS, dbm.open(dir.resolve("casket").toString(), true, shards).getCode());
    dbm.close().orDie();
  }
}

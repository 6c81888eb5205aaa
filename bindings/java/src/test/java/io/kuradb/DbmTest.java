package io.kuradb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DbmTest {
  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private Dbm hash() {
    return Dbm.open(dir.resolve("casket.kh").toString(), true, Map.of("num_buckets", "100"));
  }

  @Test
  void setGetRemoveWithBytesAndStrings() {
    try (Dbm db = hash()) {
      db.set(b("k"), new byte[] {0, 1, 2});
      assertArrayEquals(new byte[] {0, 1, 2}, db.get(b("k")));
      db.set("名前", "値");
      assertEquals("値", db.getString("名前"));
      assertNull(db.get(b("missing")));
      assertTrue(db.contains("名前"));
      assertEquals(2, db.count());
      assertFalse(db.set(b("k"), b("other"), false));
      assertArrayEquals(new byte[] {0, 1, 2}, db.get(b("k")));
      assertTrue(db.remove("k"));
      assertFalse(db.remove("k"));
      assertEquals(1, db.count());
    }
  }

  @Test
  void appendIncrementCompareExchange() {
    try (Dbm db = hash()) {
      db.append("a", "x", ",");
      db.append("a", "y", ",");
      assertEquals("x,y", db.getString("a"));
      assertEquals(5, db.increment("n", 5, 0));
      assertEquals(3, db.increment("n", -2, 0));
      assertEquals(3, db.increment("n", Long.MIN_VALUE, 0));
      assertArrayEquals(new byte[] {0, 0, 0, 0, 0, 0, 0, 3}, db.get(b("n")));
      KuraException e = assertThrows(KuraException.class, () -> db.increment("a", 1, 0));
      assertEquals(KuraException.Kind.INVALID_ARGUMENT, e.kind());
      assertTrue(db.compareExchange("c", null, "one"));
      assertFalse(db.compareExchange("c", "two", "three"));
      assertTrue(db.compareExchange("c", "one", null));
      assertFalse(db.contains("c"));
    }
  }

  @Test
  void multiOperations() {
    try (Dbm db = hash()) {
      Map<String, String> records = new LinkedHashMap<>();
      records.put("a", "1");
      records.put("b", "2");
      db.setMultiString(records);
      Map<String, String> got = db.getMultiString(List.of("a", "b", "zz"));
      assertEquals(records, got);
      Map<byte[], byte[]> raw = new LinkedHashMap<>();
      raw.put(b("b"), b("x"));
      raw.put(b("c"), b("3"));
      assertFalse(db.setMulti(raw, false));
      assertFalse(db.contains("c"));
      assertEquals(2, db.removeMulti(List.of(b("a"), b("b"), b("q"))));
      assertEquals(0, db.count());
    }
  }

  @Test
  void processSetsRemovesAndKeeps() {
    try (Dbm db = hash()) {
      db.process(b("p"), (k, v) -> {
        assertNull(v);
        return b("new");
      }, true);
      assertEquals("new", db.getString("p"));
      db.process(b("p"), (k, v) -> Dbm.KEEP, true);
      assertEquals("new", db.getString("p"));
      db.process(b("p"), (k, v) -> Dbm.REMOVE, true);
      assertFalse(db.contains("p"));
      // An empty value is a value, not the remove marker.
      db.process(b("e"), (k, v) -> new byte[0], true);
      assertArrayEquals(new byte[0], db.get(b("e")));
      assertThrows(KuraException.class, () -> db.process(b("e"), (k, v) -> b("x"), false));
    }
  }

  @Test
  void aCallbackThatThrowsReachesTheCallerAndChangesNothing() {
    try (Dbm db = hash()) {
      db.set("k", "v");
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> db.process(b("k"), (k, v) -> { throw new IllegalStateException("boom"); }, true));
      assertEquals("boom", e.getMessage());
      assertEquals("v", db.getString("k"));
      db.set("k2", "v2");
      AtomicInteger calls = new AtomicInteger();
      assertThrows(ArithmeticException.class, () -> db.processEach((k, v) -> {
        calls.incrementAndGet();
        throw new ArithmeticException("each");
      }, true));
      // The first failure stops the calls into Java.
      assertEquals(1, calls.get());
      assertEquals(2, db.count());
      // The database still works afterwards.
      db.set("k3", "v3");
      assertEquals(3, db.count());
    }
  }

  @Test
  void usingTheDatabaseInsideItsOwnCallbackThrowsInsteadOfHanging() {
    try (Dbm db = hash()) {
      KuraException e = assertThrows(KuraException.class,
          () -> db.process(b("k"), (k, v) -> db.get(b("other")), true));
      assertEquals(KuraException.Kind.INFEASIBLE, e.kind());
      assertTrue(e.getMessage().contains("callback"), e.getMessage());
    }
  }

  @Test
  void processEachVisitsAndChangesEveryRecord() {
    try (Dbm db = hash()) {
      for (int i = 0; i < 10; i++) {
        db.set("k" + i, "v" + i);
      }
      db.processEach((k, v) -> new String(k, StandardCharsets.UTF_8).equals("k3") ? Dbm.REMOVE : b("x"), true);
      assertEquals(9, db.count());
      assertEquals("x", db.getString("k0"));
    }
  }

  @Test
  void cursorsIterateAndJumpInOrder() {
    try (Dbm db = Dbm.open(dir.resolve("t.kt").toString(), true)) {
      assertTrue(db.isOrdered());
      for (String k : new String[] {"c", "a", "b", "d"}) {
        db.set(k, k.toUpperCase());
      }
      List<String> keys = new ArrayList<>();
      try (Cursor c = db.cursor()) {
        for (Map.Entry<byte[], byte[]> e : c) {
          keys.add(new String(e.getKey(), StandardCharsets.UTF_8));
        }
      }
      assertEquals(List.of("a", "b", "c", "d"), keys);
      try (Cursor c = db.cursor()) {
        c.jumpUpper(b("b"), false);
        assertArrayEquals(b("c"), c.key());
        c.previous();
        assertArrayEquals(b("b"), c.key());
        c.set(b("BB"));
        c.last();
        assertArrayEquals(b("D"), c.value());
        c.remove();
        c.jump(b("a"));
        c.remove();
      }
      assertEquals("BB", db.getString("b"));
      assertEquals(2, db.count());
      assertEquals(2, db.records().size());
      assertEquals("tree", db.className());
    }
  }

  @Test
  void closingTheDatabaseClosesItsCursors() {
    Dbm db = hash();
    db.set("k", "v");
    Cursor c = db.cursor();
    db.close();
    KuraException e = assertThrows(KuraException.class, c::key);
    assertEquals(KuraException.Kind.INFEASIBLE, e.kind());
    c.close();
    c.close();
  }

  @Test
  void aClosedDatabaseThrowsAndDoubleCloseIsANoOp() {
    Dbm db = hash();
    db.close();
    db.close();
    assertFalse(db.isOpen());
    KuraException e = assertThrows(KuraException.class, () -> db.get(b("k")));
    assertEquals(KuraException.Kind.INFEASIBLE, e.kind());
    assertThrows(KuraException.class, db::count);
    assertThrows(KuraException.class, db::cursor);
    assertEquals("Dbm(closed)", db.toString());
  }

  @Test
  void nullArgumentsThrowNullPointerException() {
    try (Dbm db = hash()) {
      assertThrows(NullPointerException.class, () -> db.get((byte[]) null));
      assertThrows(NullPointerException.class, () -> db.set(null, b("v")));
      assertThrows(NullPointerException.class, () -> db.set(b("k"), null));
      assertThrows(NullPointerException.class, () -> db.getString(null));
      assertThrows(NullPointerException.class, () -> db.process(b("k"), null, true));
      assertThrows(NullPointerException.class, () -> db.removeMulti(java.util.Arrays.asList(b("a"), null)));
      assertThrows(NullPointerException.class, () -> Dbm.open(null, true));
      assertEquals(0, db.count());
    }
  }

  @Test
  void openErrorsCarryTheirKind() {
    KuraException e = assertThrows(KuraException.class,
        () -> Dbm.open(dir.resolve("x.kh").toString(), true, Map.of("no_such_param", "1")));
    assertEquals(KuraException.Kind.INVALID_ARGUMENT, e.kind());
    assertTrue(e.getMessage().contains("no_such_param"), e.getMessage());
    KuraException missing = assertThrows(KuraException.class,
        () -> Dbm.open(dir.resolve("absent.kh").toString(), false));
    assertEquals(KuraException.Kind.NOT_FOUND, missing.kind());
  }

  @Test
  void recordsPersistAcrossReopenAndHousekeepingWorks() throws Exception {
    String path = dir.resolve("p.kh").toString();
    try (Dbm db = Dbm.open(path, true)) {
      for (int i = 0; i < 100; i++) {
        db.set("key" + i, "value" + i);
      }
      db.synchronize(false);
      db.rebuild(Map.of("num_buckets", "1000"));
      assertTrue(db.isHealthy());
      Map<String, String> figures = db.inspect();
      assertEquals("100", figures.get("num_records"));
      assertTrue(db.fileSize() > 0);
      assertEquals(path, db.path());
      db.copyFileData(dir.resolve("copy.kh").toString(), false);
      assertEquals(List.of(b("key42")).size(), db.search("begin", b("key42"), 0).size());
    }
    try (Dbm db = Dbm.open(path, false)) {
      assertEquals("value7", db.getString("key7"));
      KuraException e = assertThrows(KuraException.class, () -> db.set("x", "y"));
      assertEquals(KuraException.Kind.INFEASIBLE, e.kind());
    }
    try (Dbm copy = Dbm.open(dir.resolve("copy.kh").toString(), false)) {
      assertEquals(100, copy.count());
    }
    assertTrue(Files.exists(dir.resolve("copy.kh")));
  }

  @Test
  void severalThreadsShareOneDatabase() throws Exception {
    try (Dbm db = hash()) {
      int threads = 4;
      int perThread = 2000;
      List<Thread> workers = new ArrayList<>();
      List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
      for (int t = 0; t < threads; t++) {
        final int id = t;
        Thread w = new Thread(() -> {
          try {
            for (int i = 0; i < perThread; i++) {
              db.set("t" + id + "-" + i, "v" + i);
              db.increment("counter", 1, 0);
              if (!("v" + i).equals(db.getString("t" + id + "-" + i))) {
                throw new AssertionError("lost t" + id + "-" + i);
              }
            }
          } catch (Throwable e) {
            failures.add(e);
          }
        });
        workers.add(w);
        w.start();
      }
      for (Thread w : workers) {
        w.join();
      }
      assertEquals(List.of(), failures);
      assertEquals(threads * perThread, db.increment("counter", Long.MIN_VALUE, 0));
      assertEquals(threads * perThread + 1, db.count());
    }
  }

  @Test
  void closeWhileOtherThreadsWorkLeavesThemWithExceptionsNotCrashes() throws Exception {
    Dbm db = hash();
    AtomicInteger errors = new AtomicInteger();
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < 3; t++) {
      Thread w = new Thread(() -> {
        for (int i = 0; i < 20000; i++) {
          try {
            db.set("k" + (i % 100), "v");
          } catch (KuraException e) {
            errors.incrementAndGet();
            return;
          }
        }
      });
      workers.add(w);
      w.start();
    }
    Thread.sleep(5);
    db.close();
    for (Thread w : workers) {
      w.join();
    }
    assertFalse(db.isOpen());
  }

  @Test
  void onMemoryClassesByParameter() {
    try (Dbm db = Dbm.open(dir.resolve("m.data").toString(), true, Map.of("dbm", "BabyDBM"))) {
      db.set("b", "2");
      db.set("a", "1");
      assertEquals("baby", db.className());
      assertEquals("a", new String(db.records().get(0).getKey(), StandardCharsets.UTF_8));
    }
  }

  /** Holds an exclusive lock on {@code path} in another process (util-linux's flock) until closed. */
  private static Process holdLock(Path path) throws Exception {
    Process holder = new ProcessBuilder("flock", "--exclusive", path.toString(), "sh", "-c", "echo held; sleep 60")
        .redirectErrorStream(true).start();
    int first = holder.getInputStream().read();
    assertEquals('h', first, "the flock holder did not start");
    return holder;
  }

  @Test
  void anOpenBesideAnotherProcessesWriterFailsAtOnceAndWaitsOnlyWhenAsked() throws Exception {
    Path path = dir.resolve("held.kh");
    Dbm.open(path.toString(), true, Map.of()).close();
    Process holder = holdLock(path);
    try {
      long start = System.nanoTime();
      KuraException e = assertThrows(KuraException.class, () -> Dbm.open(path.toString(), false, Map.of()));
      assertEquals(KuraException.Kind.WOULD_BLOCK, e.kind());
      assertTrue(e.getMessage().contains("pid " + holder.pid()), e.getMessage());
      assertTrue(e.getMessage().contains("wait=true"), e.getMessage());
      assertTrue(System.nanoTime() - start < 2_000_000_000L, "the refusal waited");
      start = System.nanoTime();
      KuraException timedOut = assertThrows(KuraException.class,
          () -> Dbm.open(path.toString(), false, Map.of("lock_timeout", "0.3")));
      assertTrue(timedOut.getMessage().contains("gave up waiting"), timedOut.getMessage());
      assertTrue(System.nanoTime() - start >= 300_000_000L, "gave up before its timeout");
      // The reference-compatible layer waits, as the reference does, unless no_wait.
      tkrzw.DBM refused = new tkrzw.DBM();
      assertFalse(refused.open(path.toString(), false, Map.of("no_wait", "true")).isOK());
      Process releaser = holder;
      new Thread(() -> {
        try {
          Thread.sleep(500);
        } catch (InterruptedException ignored) {
          Thread.currentThread().interrupt();
        }
        releaser.destroy();
      }).start();
      start = System.nanoTime();
      try (Dbm waited = Dbm.open(path.toString(), false, Map.of("wait", "true"))) {
        assertTrue(System.nanoTime() - start >= 300_000_000L, "opened before the holder left");
        assertEquals(0, waited.count());
      }
    } finally {
      holder.destroy();
      holder.waitFor();
    }
  }
}

package io.kuradb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TransactionTest {
  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private Dbm tree() {
    return Dbm.open(dir.resolve("casket.tkt").toString(), true);
  }

  @Test
  void commitAppliesEveryWriteAndReadsSeeOwnWrites() {
    try (Dbm db = tree()) {
      db.set("a", "1");
      try (Transaction tx = db.begin(Durability.SYNC)) {
        assertEquals(Durability.SYNC, tx.durability());
        assertEquals("1", tx.getString("a"));
        tx.set("a", "2");
        tx.set(b("b"), b("x"));
        tx.append(b("b"), b("y"), b(","));
        assertEquals(7, tx.increment(b("n"), 7, 0));
        assertTrue(tx.remove("a"));
        assertNull(tx.get(b("a")));
        assertEquals("x,y", tx.getString("b"));
        assertEquals(1, db.count());
        assertEquals("1", db.getString("a"));
        tx.commit();
        assertFalse(tx.isActive());
      }
      assertNull(db.getString("a"));
      assertEquals("x,y", db.getString("b"));
      assertEquals(7, db.increment("n", 0, 0));
    }
  }

  @Test
  void closeAbortsAnUncommittedTransaction() {
    try (Dbm db = tree()) {
      assertThrows(IllegalStateException.class, () -> {
        try (Transaction tx = db.begin(Durability.OS)) {
          tx.set("a", "1");
          throw new IllegalStateException("the work failed");
        }
      });
      assertNull(db.getString("a"));
      Transaction tx = db.begin(Durability.NONE);
      tx.set("b", "1");
      tx.abort();
      assertFalse(tx.isActive());
      tx.abort();
      tx.close();
      assertEquals(0, db.count());
    }
  }

  @Test
  void aConflictAppliesNothing() {
    try (Dbm db = tree()) {
      db.set("a", "1");
      try (Transaction first = db.begin(Durability.OS);
          Transaction second = db.begin(Durability.OS)) {
        assertEquals("1", first.getString("a"));
        assertEquals("1", second.getString("a"));
        first.set("a", "2");
        second.set("a", "3");
        second.set("c", "3");
        first.commit();
        KuraException e = assertThrows(KuraException.class, second::commit);
        assertEquals(KuraException.Kind.CONFLICT, e.kind());
        assertFalse(second.isActive());
      }
      assertEquals("2", db.getString("a"));
      assertNull(db.getString("c"));
    }
  }

  @Test
  void savepointsUndoLaterWrites() {
    try (Dbm db = tree()) {
      try (Transaction tx = db.begin(Durability.OS);
          Transaction other = db.begin(Durability.OS)) {
        tx.set("a", "1");
        Transaction.Savepoint point = tx.savepoint();
        tx.set("b", "2");
        tx.remove("a");
        tx.rollbackTo(point);
        assertEquals("1", tx.getString("a"));
        assertNull(tx.getString("b"));
        Transaction.Savepoint foreign = other.savepoint();
        assertThrows(IllegalArgumentException.class, () -> tx.rollbackTo(foreign));
        tx.commit();
      }
      assertEquals("1", db.getString("a"));
      assertNull(db.getString("b"));
    }
  }

  @Test
  void aSnapshotKeepsItsStateWhileAWriterGoesOn() throws Exception {
    try (Dbm db = tree()) {
      db.set("a", "1");
      db.set("b", "2");
      try (Snapshot view = db.snapshot()) {
        Thread writer = new Thread(() -> {
          for (int i = 0; i < 100; i++) {
            db.set("a", Integer.toString(i + 10));
            db.set("w" + i, "x");
          }
          db.remove("b");
        });
        writer.start();
        writer.join();
        assertEquals("1", view.getString("a"));
        assertEquals("2", view.getString("b"));
        assertEquals(2, view.count());
        List<String> keys = new ArrayList<>();
        for (byte[] k : view.keys()) {
          keys.add(new String(k, StandardCharsets.UTF_8));
        }
        assertEquals(List.of("a", "b"), keys);
        List<String> values = new ArrayList<>();
        for (Map.Entry<byte[], byte[]> e : view) {
          values.add(new String(e.getValue(), StandardCharsets.UTF_8));
        }
        assertEquals(List.of("1", "2"), values);
        assertEquals(101, db.count());
        view.close();
        assertFalse(view.isActive());
        KuraException e = assertThrows(KuraException.class, view::count);
        assertEquals(KuraException.Kind.INFEASIBLE, e.kind());
      }
    }
  }

  @Test
  void aBatchAppliesAsOneUnitAndIsDiscardedOnClose() {
    try (Dbm db = tree()) {
      db.set("gone", "x");
      try (Batch batch = db.batch(Durability.SYNC)) {
        batch.set("a", "1").set(b("b"), b("x")).append(b("b"), b("y"), b(",")).remove("gone");
        batch.increment(b("n"), 5, 10);
        assertEquals(5, batch.size());
        assertNull(db.getString("a"));
        batch.commit();
        assertFalse(batch.isActive());
        KuraException e = assertThrows(KuraException.class, () -> batch.set("c", "1"));
        assertEquals(KuraException.Kind.INFEASIBLE, e.kind());
      }
      assertEquals("1", db.getString("a"));
      assertEquals("x,y", db.getString("b"));
      assertNull(db.getString("gone"));
      assertEquals(15, db.increment("n", 0, 0));
      try (Batch batch = db.batch(Durability.NONE)) {
        batch.set("discarded", "1");
      }
      assertNull(db.getString("discarded"));
    }
  }

  @Test
  void runRetriesAConflictAndGivesUpAfterItsRetries() {
    try (Dbm db = tree()) {
      db.set("n", "0");
      AtomicInteger calls = new AtomicInteger();
      String answer = db.run(Durability.OS, 3, tx -> {
        String n = tx.getString("n");
        if (calls.getAndIncrement() == 0) {
          // A commit of its own after this transaction read "n": a conflict.
          db.set("n", "5");
        }
        tx.set("n", Integer.toString(Integer.parseInt(tx.getString("n")) + 1));
        return n;
      });
      assertEquals(2, calls.get());
      assertEquals("5", answer);
      assertEquals("6", db.getString("n"));

      AtomicInteger tries = new AtomicInteger();
      KuraException e = assertThrows(KuraException.class, () -> db.run(Durability.OS, 2, tx -> {
        int attempt = tries.incrementAndGet();
        tx.getString("n");
        db.set("n", "again" + attempt);
        tx.set("n", "lost");
        return null;
      }));
      assertEquals(KuraException.Kind.CONFLICT, e.kind());
      assertEquals(3, tries.get());
      assertEquals("again3", db.getString("n"));

      AtomicInteger once = new AtomicInteger();
      assertThrows(ArithmeticException.class, () -> db.run(Durability.OS, 5, tx -> {
        once.incrementAndGet();
        tx.set("n", "never");
        return 1 / 0;
      }));
      assertEquals(1, once.get());
      assertEquals("again3", db.getString("n"));
      assertThrows(IllegalArgumentException.class, () -> db.run(Durability.OS, -1, tx -> null));
    }
  }

  @Test
  void callsAfterCommitOrAfterTheDatabaseClosesThrowClearly() {
    Dbm db = tree();
    Transaction tx = db.begin(Durability.OS);
    tx.set("a", "1");
    tx.commit();
    KuraException e = assertThrows(KuraException.class, () -> tx.set("b", "2"));
    assertEquals(KuraException.Kind.INFEASIBLE, e.kind());
    assertTrue(e.getMessage().contains("finished"), e.getMessage());
    assertEquals(KuraException.Kind.INFEASIBLE, assertThrows(KuraException.class, tx::commit).kind());

    Transaction open = db.begin(Durability.OS);
    open.set("c", "3");
    Snapshot view = db.snapshot();
    Batch batch = db.batch(Durability.OS);
    batch.set("d", "4");
    db.close();
    assertFalse(open.isActive());
    assertFalse(view.isActive());
    e = assertThrows(KuraException.class, open::commit);
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
    e = assertThrows(KuraException.class, () -> view.getString("a"));
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
    e = assertThrows(KuraException.class, batch::commit);
    assertTrue(e.getMessage().contains("not open"), e.getMessage());
    assertThrows(KuraException.class, () -> db.begin(Durability.OS));
    assertThrows(KuraException.class, db::snapshot);
    open.close();
    view.close();

    try (Dbm again = tree()) {
      assertEquals("1", again.getString("a"));
      assertNull(again.getString("c"));
      assertNull(again.getString("d"));
    }
  }
}

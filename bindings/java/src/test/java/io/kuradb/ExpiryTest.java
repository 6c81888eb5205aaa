package io.kuradb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ExpiryTest {
  @TempDir Path dir;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private Dbm expiring(String name) {
    return Dbm.open(dir.resolve(name).toString(), true, Map.of("expiry", "true"));
  }

  @Test
  void setWithATtlReadsBackAndExpires() throws InterruptedException {
    try (Dbm db = expiring("sessions.kt")) {
      assertTrue(db.hasExpiry());
      db.set(b("session"), b("alice"), Duration.ofMillis(200));
      db.set("config", "kept");
      Duration left = db.ttl(b("session")).orElseThrow();
      assertTrue(left.compareTo(Duration.ZERO) > 0 && left.compareTo(Duration.ofMillis(200)) <= 0, left.toString());
      assertEquals(Optional.empty(), db.ttl(b("config")));
      assertEquals(Optional.empty(), db.expiry(b("config")));
      assertNull(db.ttl(b("missing")));
      Thread.sleep(300);
      assertNull(db.get(b("session")));
      assertNull(db.ttl(b("session")));
      assertEquals(1, db.count());
    }
  }

  @Test
  void expirePersistAndBadTimes() {
    try (Dbm db = expiring("casket.kh")) {
      db.set(b("k"), b("v"));
      assertTrue(db.expire(b("k"), Duration.ofSeconds(100)));
      assertTrue(db.ttl(b("k")).orElseThrow().getSeconds() >= 99);
      assertTrue(db.persist(b("k")));
      assertFalse(db.persist(b("k")));
      assertFalse(db.expire(b("absent"), Duration.ofSeconds(1)));
      Instant at = Instant.now().plusSeconds(50);
      assertTrue(db.expireAt(b("k"), at));
      assertEquals(at.toEpochMilli(), db.expiry(b("k")).orElseThrow().toEpochMilli());
      assertFalse(db.set(b("k"), b("w"), false, Duration.ofSeconds(5)));
      assertArrayEquals(b("v"), db.get(b("k")));
      KuraException e =
          assertThrows(KuraException.class, () -> db.set(b("k"), b("v"), Duration.ofSeconds(-1)));
      assertEquals(KuraException.Kind.INVALID_ARGUMENT, e.kind());
      e = assertThrows(KuraException.class, () -> db.expireAt(b("k"), Instant.EPOCH.minusSeconds(5)));
      assertEquals(KuraException.Kind.INVALID_ARGUMENT, e.kind());
      assertTrue(db.expire(b("k"), Duration.ZERO));
      assertNull(db.get(b("k")));
    }
  }

  @Test
  void sweepAndTheBackgroundSweeper() throws InterruptedException {
    try (Dbm db = expiring("swept.kt")) {
      for (int i = 0; i < 30; i++) {
        db.set(b("gone" + i), b("x"), Duration.ofMillis(20));
      }
      db.set("stays", "y");
      Thread.sleep(60);
      long removed = 0;
      while (true) {
        long[] report = db.sweep(7);
        removed += report[1];
        if (report[2] == 1) {
          break;
        }
      }
      assertEquals(30, removed);
      assertThrows(KuraException.class, () -> db.sweep(0));
      db.startSweeper(100_000);
      assertThrows(KuraException.class, () -> db.startSweeper(10));
      assertTrue(db.stopSweeper() >= 0);
      assertEquals(-1, db.stopSweeper());
      db.startSweeper(10); // close stops it
    }
  }

  @Test
  void aDatabaseWithoutExpirySaysSo() {
    try (Dbm db = Dbm.open(dir.resolve("plain.kh").toString(), true)) {
      db.set("k", "v");
      assertFalse(db.hasExpiry());
      KuraException e =
          assertThrows(KuraException.class, () -> db.set(b("k"), b("v"), Duration.ofSeconds(5)));
      assertEquals(KuraException.Kind.INFEASIBLE, e.kind());
      assertTrue(e.getMessage().contains("expiry=true"), e.getMessage());
      assertThrows(KuraException.class, () -> db.ttl(b("k")));
    }
  }
}

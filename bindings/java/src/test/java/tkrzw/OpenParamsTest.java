package tkrzw;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reference's open parameters for a file not closed cleanly, the tree's pages and the file
 * class (docs/java.md, "Reference open parameters"), and the reopening of a file whose extension
 * names no class.
 */
class OpenParamsTest {
  @TempDir Path dir;

  /**
   * A copy of a database taken while its writer had it open, after a hard synchronization of
   * "a"="synced" and a soft one of "a"="later", "b".
   */
  private String crashed(String name, Map<String, String> params) throws IOException {
    Map<String, String> all = new HashMap<>(params);
    all.put("num_buckets", "7");
    DBM dbm = new DBM();
    dbm.open(dir.resolve(name).toString(), true, all).orDie();
    dbm.set("a", "synced").orDie();
    dbm.synchronize(true).orDie();
    dbm.set("a", "later").orDie();
    dbm.set("b", "later").orDie();
    dbm.synchronize(false).orDie();
    Path copy = dir.resolve("crashed-" + name);
    Files.copy(dir.resolve(name), copy);
    dbm.close().orDie();
    return copy.toString();
  }

  @Test
  void restoreSyncGoesBackToTheLastHardSynchronization() throws IOException {
    String copy = crashed("log.tkh", Map.of("update_mode", "UPDATE_APPENDING"));
    DBM dbm = new DBM();
    dbm.open(copy, true, Map.of("restore_mode", "RESTORE_SYNC:RESTORE_NO_SHORTCUTS")).orDie();
    assertEquals("synced", dbm.get("a"));
    assertNull(dbm.get("b"));
    dbm.close().orDie();
    Status inPlace = new DBM().open(dir.resolve("h.tkh").toString(), true, "restore_mode=RESTORE_SYNC");
    assertEquals(Status.INVALID_ARGUMENT_ERROR, inPlace.getCode());
    assertTrue(inPlace.getMessage().contains("in place"), inPlace.getMessage());
  }

  @Test
  void restoreReadOnlyLeavesTheFileAndRefusesWrites() throws IOException {
    String copy = crashed("casket.tkt", Map.of());
    byte[] before = Files.readAllBytes(Path.of(copy));
    DBM dbm = new DBM();
    dbm.open(copy, true, "restore_mode=RESTORE_READ_ONLY").orDie();
    assertNotNull(dbm.get("a"));
    assertFalse(dbm.isHealthy());
    assertEquals(Status.PRECONDITION_ERROR, dbm.set("c", "new").getCode());
    dbm.close().orDie();
    assertArrayEquals(before, Files.readAllBytes(Path.of(copy)));
  }

  @Test
  void pageUpdateNoneIsTakenAndWriteIsRefused() {
    DBM dbm = new DBM();
    dbm.open(dir.resolve("a.tkt").toString(), true, "page_update_mode=PAGE_UPDATE_NONE").orDie();
    dbm.close().orDie();
    assertEquals(Status.INVALID_ARGUMENT_ERROR,
        dbm.open(dir.resolve("b.tkt").toString(), true, "page_update_mode=PAGE_UPDATE_WRITE").getCode());
  }

  @Test
  void theFileClassIsTheReferences() {
    DBM dbm = new DBM();
    dbm.open(dir.resolve("a.tkh").toString(), true).orDie();
    assertEquals("MemoryMapParallelFile", dbm.inspect().get("file_class"));
    dbm.close().orDie();
    dbm.open(dir.resolve("b.tkh").toString(), true, "file=StdFile").orDie();
    assertEquals("PositionalAtomicFile", dbm.inspect().get("file_class"));
    dbm.close().orDie();
    dbm.open(dir.resolve("c.tkh").toString(), true,
        Map.of("file", "PositionalParallelFile", "access_options", "padding")).orDie();
    dbm.close().orDie();
    assertEquals(Status.INVALID_ARGUMENT_ERROR,
        dbm.open(dir.resolve("d.tkh").toString(), true, "access_options=padding").getCode());
  }

  @Test
  void anExistingFileOfNoKnownExtensionOpensAsItsHeadSays() throws IOException {
    DBM dbm = new DBM();
    dbm.open(dir.resolve("casket.tkt").toString(), true).orDie();
    dbm.set("k", "v").orDie();
    dbm.close().orDie();
    Files.copy(dir.resolve("casket.tkt"), dir.resolve("casket.data"));
    dbm.open(dir.resolve("casket.data").toString(), true).orDie();
    assertEquals("TreeDBM", dbm.inspect().get("class"));
    assertEquals("v", dbm.get("k"));
    dbm.close().orDie();
    assertEquals(Status.INVALID_ARGUMENT_ERROR,
        dbm.open(dir.resolve("new.data").toString(), true).getCode());
  }
}

package tkrzw;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An empty path opens an on-memory database with no file, as the reference's
 * does (python3-tkrzw 1.0.25 answers the same), and restoreDatabase refuses
 * to write over a database.
 */
class EmptyPathTest {
  @TempDir Path dir;

  @Test
  void anEmptyPathOpensAnOnMemoryDatabaseOfTheClassDbmNames() {
    String[][] cases = {
      {"", "TinyDBM"}, {"TinyDBM", "TinyDBM"}, {"BabyDBM", "BabyDBM"}, {"CacheDBM", "CacheDBM"},
      {"StdHashDBM", "StdHashDBM"}, {"StdTreeDBM", "StdTreeDBM"},
    };
    for (String[] c : cases) {
      DBM dbm = new DBM();
      Map<String, String> params = c[0].isEmpty() ? Map.of() : Map.of("dbm", c[0]);
      dbm.open("", true, params).orDie();
      dbm.set("b", "2").orDie();
      dbm.set("a", "1").orDie();
      assertEquals("1", dbm.get("a"), c[1]);
      assertEquals(c[1], dbm.inspect().get("class"));
      assertNull(dbm.getFilePath(), c[1]);
      assertEquals(-1, dbm.getFileSize(), c[1]);
      assertFalse(dbm.isWritable(), "the reference says false: no file is open for writing");
      dbm.synchronize(true).orDie();
      dbm.rebuild().orDie();
      assertEquals(2, dbm.count());
      assertEquals(Status.PRECONDITION_ERROR, dbm.copyFileData(dir.resolve("copy").toString(), false).getCode());
      dbm.close().orDie();
      dbm.open("", true, params).orDie();
      assertEquals(0, dbm.count(), "each open is a new database");
      dbm.close().orDie();
    }
    // Read-only or not: with no file to protect, it takes writes.
    DBM reader = new DBM();
    reader.open("", false).orDie();
    reader.set("k", "v").orDie();
    assertEquals("v", reader.get("k"));
    reader.close().orDie();
    DBM shards = new DBM();
    shards.open("", true, Map.of("num_shards", "3", "dbm", "BabyDBM")).orDie();
    for (String k : new String[] {"c", "a", "b"}) {
      shards.set(k, k).orDie();
    }
    assertEquals("", shards.getFilePath());
    assertEquals("BabyDBM", shards.inspect().get("class"));
    Iterator it = shards.makeIterator();
    it.first().orDie();
    assertEquals("a", it.getKeyString(), "the shards merge in order");
    it.destruct();
    shards.close().orDie();
  }

  @Test
  void aFileClassWithAnEmptyPathIsNotFound() throws Exception {
    for (String name : new String[] {"HashDBM", "TreeDBM", "SkipDBM"}) {
      DBM dbm = new DBM();
      Status status = dbm.open("", true, Map.of("dbm", name));
      assertEquals(Status.NOT_FOUND_ERROR, status.getCode(), name);
      assertTrue(status.getMessage().contains("the path is empty"), status.getMessage());
      assertFalse(dbm.isOpen());
    }
  }

  @Test
  void restoreDatabaseRefusesToWriteOverADatabase() throws Exception {
    String src = dir.resolve("src.tkh").toString();
    DBM dbm = new DBM();
    dbm.open(src, true).orDie();
    dbm.set("k", "v").orDie();
    dbm.close().orDie();
    String dest = dir.resolve("dest.tkh").toString();
    DBM.restoreDatabase(src, dest, "", -1).orDie();
    long size = Files.size(Path.of(dest));
    assertEquals(Status.PRECONDITION_ERROR, DBM.restoreDatabase(src, dest, "", -1).getCode());
    assertEquals(size, Files.size(Path.of(dest)));
    assertEquals(Status.NOT_FOUND_ERROR,
        DBM.restoreDatabase(dir.resolve("missing.tkh").toString(), dir.resolve("x.tkh").toString(), "", -1)
            .getCode());
  }
}

package tkrzw;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileTest {
  @TempDir Path dir;

  @Test
  void readsWritesAppendsAndPadsAsTheReferenceDocuments() {
    String path = dir.resolve("casket.txt").toString();
    File file = new File();
    assertEquals("tkrzw.File(unopened)", file.toString());
    Map<String, String> params = Utility.parseParams(
        "truncate=true,file=pos-atom,block_size=512,access_options=padding:pagecache");
    assertEquals(Status.SUCCESS, file.open(path, true, params).getCode());
    assertEquals(Status.PRECONDITION_ERROR, file.open(path, true).getCode());
    assertEquals(Status.SUCCESS, file.write(5, "12345").getCode());
    assertEquals(Status.SUCCESS, file.write(0, "ABCDE").getCode());
    assertEquals(10, file.append("FGH"));
    assertEquals(13, file.append("IJ"));
    assertEquals(15, file.getSize());
    assertTrue(file.getPath().endsWith("casket.txt"));
    assertTrue(file.toString().contains("PositionalAtomicFile"), file.toString());
    assertEquals(Status.SUCCESS, file.truncate(12).getCode());
    assertEquals(Status.SUCCESS, file.synchronize(false).getCode());
    assertEquals(12, file.getSize());
    assertEquals("ABCDE12345FG", file.readString(0, 12));
    assertEquals("DE123", file.readString(3, 5));
    byte[] buf = new byte[3];
    assertEquals(Status.SUCCESS, file.read(1, buf, 3).getCode());
    assertArrayEquals("BCD".getBytes(StandardCharsets.UTF_8), buf);
    Status status = new Status();
    assertNull(file.read(1024, 10, status));
    assertEquals(Status.INFEASIBLE_ERROR, status.getCode());
    assertEquals(Status.SUCCESS, file.close().getCode());
    assertEquals(Status.PRECONDITION_ERROR, file.close().getCode());
    assertEquals(Status.SUCCESS, file.open(path, false).getCode());
    assertEquals(512, file.getSize(), "padding rounds the end up to the block size");
    assertEquals("E12345F", file.readString(4, 7));
    assertEquals(Status.PRECONDITION_ERROR, file.write(0, "x").getCode(), "opened for reading");
    file.close().orDie();
    file.destruct();
  }

  @Test
  void flatRecordsGoThroughAFileAndLinesAreSearched() throws Exception {
    DBM dbm = new DBM();
    dbm.open(dir.resolve("casket.tkh").toString(), true, "num_buckets=100").orDie();
    for (int i = 1; i <= 100; i++) {
      dbm.set(String.format("%08d", i), Integer.toString(i), false).orDie();
    }
    String dest = dir.resolve("casket.txt").toString();
    File file = new File();
    file.open(dest, true, "truncate=true").orDie();
    assertEquals(Status.SUCCESS, dbm.exportToFlatRecords(file).getCode());
    dbm.clear().orDie();
    assertEquals(Status.SUCCESS, dbm.importFromFlatRecords(file).getCode());
    assertEquals(100, dbm.count());
    file.close().orDie();
    assertEquals(Status.PRECONDITION_ERROR, dbm.exportToFlatRecords(file).getCode());
    file.open(dest, true, "truncate=true").orDie();
    assertEquals(Status.SUCCESS, dbm.exportKeysAsLines(file).getCode());
    file.close().orDie();
    dbm.close().orDie();
    assertEquals(100, Files.readAllLines(Path.of(dest)).size());

    file.open(dest, false).orDie();
    // Memory-mapped without a whole-file lock unless told, as the reference's File.
    assertTrue(file.toString().contains("MemoryMapParallelFile"), file.toString());
    file.close().orDie();
    // The reference's StdFile is the positional file with a whole-file lock.
    file.open(dest, false, "file=StdFile").orDie();
    assertTrue(file.toString().contains("PositionalAtomicFile"), file.toString());
    assertEquals(12, file.search("contain", "001", 0).length);
    assertEquals(3, file.search("contain", "001", 3).length);
    assertEquals(10, file.search("begin", "0000001", 0).length);
    assertEquals(10, file.search("end", "1", 0).length);
    assertEquals(10, file.search("regex", "^\\d+1$", 0).length);
    assertEquals(3, file.search("edit", "00000100", 3).length);
    assertEquals(3, file.search("editbin", "00000100", 3).length);
    String[] begin = file.search("begin", "0000001", 0);
    assertTrue(Arrays.asList(begin).contains("00000010"));
    StatusException e = assertThrows(StatusException.class, () -> file.search("foo", "00000100", 3));
    assertEquals(Status.INVALID_ARGUMENT_ERROR, e.getStatus().getCode());
    file.close().orDie();
  }

  @Test
  void misuseAnswersAStatus() {
    File file = new File();
    assertEquals(Status.PRECONDITION_ERROR, file.write(0, "x").getCode());
    assertEquals(-1, file.getSize());
    assertNull(file.getPath());
    assertEquals(-1, file.append("x"));
    assertEquals(Status.NOT_FOUND_ERROR.getNumber() > 0, true);
    Status missing = file.open(dir.resolve("none").toString(), false);
    assertTrue(!missing.isOK(), missing.toString());
    assertEquals(Status.INVALID_ARGUMENT_ERROR,
        file.open(dir.resolve("x").toString(), true, "no_such=1").getCode());
    assertEquals(Status.INVALID_ARGUMENT_ERROR,
        file.open(dir.resolve("x").toString(), true, "file=mmap-para,block_size=512").getCode());
    file.open(dir.resolve("x").toString(), true).orDie();
    assertThrows(NullPointerException.class, () -> file.write(0, (byte[]) null));
    assertThrows(IllegalArgumentException.class, () -> file.write(0, new byte[2], 5));
    file.close().orDie();
  }
}

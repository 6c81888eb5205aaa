package tkrzw;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IndexTest {
  @TempDir Path dir;

  private static List<String> walk(IndexIterator iter, boolean forward) {
    List<String> seen = new ArrayList<>();
    while (true) {
      String[] pair = iter.getString();
      if (pair == null) {
        return seen;
      }
      seen.add(pair[0] + "=" + pair[1]);
      if (forward) {
        iter.next();
      } else {
        iter.previous();
      }
    }
  }

  private void exercise(Index index) {
    assertEquals(Status.SUCCESS, index.add("tokyo", "user:17").getCode());
    index.add("tokyo", "user:3").orDie();
    index.add("osaka", "user:8").orDie();
    index.add("tokyo", "user:3").orDie();
    assertEquals(3, index.count());
    assertTrue(index.contains("osaka", "user:8"));
    assertFalse(index.contains("osaka", "user:9"));
    assertArrayEquals(new String[] {"user:17", "user:3"}, index.getValues("tokyo", 0));
    assertArrayEquals(new String[] {"user:17"}, index.getValues("tokyo", 1));
    assertEquals(0, index.getValues("kyoto", 0).length);
    IndexIterator iter = index.makeIterator();
    assertNull(iter.get(), "not positioned yet");
    iter.first();
    assertEquals(List.of("osaka=user:8", "tokyo=user:17", "tokyo=user:3"), walk(iter, true));
    iter.last();
    assertEquals(List.of("tokyo=user:3", "tokyo=user:17", "osaka=user:8"), walk(iter, false));
    iter.jump("tokyo", "");
    assertArrayEquals(new String[] {"tokyo", "user:17"}, iter.getString());
    assertTrue(iter.toString().contains("tokyo"));
    // A pair removed under the iterator: it goes on from where the pair was.
    assertEquals(Status.SUCCESS, index.remove("tokyo", "user:17").getCode());
    assertArrayEquals(new String[] {"tokyo", "user:3"}, iter.getString());
    iter.next();
    assertNull(iter.get());
    iter.destruct();
    assertEquals(Status.NOT_FOUND_ERROR, index.remove("tokyo", "user:17").getCode());
    assertTrue(index.isOpen());
    assertTrue(index.isWritable());
    assertEquals(Status.SUCCESS, index.synchronize(false).getCode());
    assertEquals(Status.SUCCESS, index.rebuild().getCode());
    assertEquals(Status.SUCCESS, index.clear().getCode());
    assertEquals(0, index.count());
  }

  @Test
  void aFileIndexKeepsPairsInOrderAndReopens() {
    String path = dir.resolve("city.tkt").toString();
    Index index = new Index();
    assertEquals("tkrzw.Index(unopened)", index.toString());
    assertEquals(Status.SUCCESS, index.open(path, true, "truncate=true").getCode());
    assertEquals(Status.PRECONDITION_ERROR, index.open(path, true).getCode());
    exercise(index);
    index.add("kyoto", "user:1").orDie();
    assertTrue(index.getFilePath().endsWith("city.tkt"));
    assertTrue(index.toString().contains("num_records=1"), index.toString());
    assertEquals(Status.SUCCESS, index.close().getCode());
    assertEquals(Status.PRECONDITION_ERROR, index.close().getCode());
    index.open(path, false).orDie();
    assertArrayEquals(new String[] {"user:1"}, index.getValues("kyoto", 0));
    assertFalse(index.isWritable());
    assertFalse(index.add("nara", "user:2").isOK(), "opened for reading");
    index.close().orDie();
    index.destruct();
  }

  @Test
  void anEmptyPathMakesAnIndexInMemory() {
    Index index = new Index();
    index.open("", true).orDie();
    assertEquals("", index.getFilePath());
    exercise(index);
    index.close().orDie();
    Index decimal = new Index();
    decimal.open("", true, "key_comparator=PairDecimalKeyComparator").orDie();
    decimal.add("10", "a").orDie();
    decimal.add("9", "b").orDie();
    IndexIterator iter = decimal.makeIterator();
    iter.first();
    assertEquals(List.of("9=b", "10=a"), walk(iter, true));
    decimal.close().orDie();
    assertEquals(Status.INVALID_ARGUMENT_ERROR,
        new Index().open("", true, "key_comparator=LexicalKeyComparator").getCode());
  }

  @Test
  void misuseAnswersAStatus() {
    Index index = new Index();
    assertEquals(Status.PRECONDITION_ERROR, index.add("k", "v").getCode());
    assertFalse(index.contains("k", "v"));
    assertEquals(-1, index.count());
    assertEquals(0, index.getValues("k", 0).length);
    IndexIterator iter = index.makeIterator();
    iter.first();
    assertNull(iter.get());
    index.open("", true).orDie();
    index.add("k", "v").orDie();
    iter.first();
    index.close().orDie();
    assertNull(iter.get(), "the index closed under it");
  }

  @Test
  void theReferencesIndexExampleRuns() {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    java.io.PrintStream saved = System.out;
    System.setOut(new java.io.PrintStream(out, true, java.nio.charset.StandardCharsets.UTF_8));
    try {
      ReferenceIndexExample.main(new String[] {dir.resolve("casket.tkt").toString()});
    } finally {
      System.setOut(saved);
    }
    assertEquals("general\n -- marilla\n -- matthew\nsales\n -- anne\n -- gilbert\n"
        + "general: marilla\ngeneral: matthew\nsales: anne\nsales: gilbert\n",
        out.toString(java.nio.charset.StandardCharsets.UTF_8));
  }
}

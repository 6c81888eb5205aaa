package tkrzw;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the binding core gives the Java layer: status codes, parameters, number serialization. */
class BindingCoreTest {
  @TempDir Path dir;

  @Test
  void aWriteToAReaderIsAPreconditionError() {
    DBM dbm = new DBM();
    String path = dir.resolve("r.tkh").toString();
    dbm.open(path, true).orDie();
    dbm.set("k", "v").orDie();
    dbm.close().orDie();
    dbm.open(path, false).orDie();
    assertEquals(Status.PRECONDITION_ERROR, dbm.set("x", "y").getCode());
    dbm.close().orDie();
  }

  @Test
  void theReferencesParametersAreTranslated() {
    DBM dbm = new DBM();
    Status rc4 = dbm.open(dir.resolve("c.tkh").toString(), true,
        Map.of("record_comp_mode", "RECORD_COMP_RC4", "cipher_key", "k"));
    assertEquals(Status.INVALID_ARGUMENT_ERROR, rc4.getCode());
    dbm.open(dir.resolve("t.tkt").toString(), true, Map.of("max_page_size", "32")).orDie();
    dbm.set("a", "1").orDie();
    dbm.close().orDie();
  }

  @Test
  void statusCodesAreFoundByNumber() {
    assertEquals(Status.Code.PRECONDITION_ERROR, Status.Code.valueOf(4));
    assertEquals(Status.Code.APPLICATION_ERROR, Status.Code.valueOf(13));
    assertNull(Status.Code.valueOf(14));
  }

  @Test
  void utilitySerializesNumbersBigEndian() {
    assertArrayEquals(new byte[] {0, 0, 0, 0, 0, 0, 1, 0}, Utility.serializeInt(256));
    assertEquals(-5, Utility.deserializeInt(Utility.serializeInt(-5)));
    assertEquals(255, Utility.deserializeInt(new byte[] {(byte) 0xff}));
    assertEquals(-2.25, Utility.deserializeFloat(Utility.serializeFloat(-2.25)));
    assertTrue(Double.isNaN(Utility.deserializeFloat(new byte[] {1, 2, 3})));
  }
}

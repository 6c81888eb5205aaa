package io.kuradb;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Loads the JNI library: from the path in the system property
 * {@code kuradb.library.path} if it is set, else from the copy inside the jar
 * ({@code io/kuradb/native/}), extracted to a temporary file at first use.
 */
final class NativeLoader {
  private static boolean loaded;

  private NativeLoader() {}

  static synchronized void load() {
    if (loaded) {
      return;
    }
    String explicit = System.getProperty("kuradb.library.path");
    if (explicit != null && !explicit.isEmpty()) {
      System.load(Path.of(explicit).toAbsolutePath().toString());
      loaded = true;
      return;
    }
    String name = System.mapLibraryName("kuradb_java");
    try (InputStream in = NativeLoader.class.getResourceAsStream("native/" + name)) {
      if (in == null) {
        throw new UnsatisfiedLinkError(
            "kuradb: the jar holds no native library io/kuradb/native/" + name
                + " for this platform; build it with mvn -f bindings/java/pom.xml package");
      }
      Path dir = Files.createTempDirectory("kuradb-jni");
      Path file = dir.resolve(name);
      Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
      file.toFile().deleteOnExit();
      dir.toFile().deleteOnExit();
      System.load(file.toAbsolutePath().toString());
      loaded = true;
    } catch (IOException e) {
      UnsatisfiedLinkError error =
          new UnsatisfiedLinkError("kuradb: cannot extract the native library: " + e);
      error.initCause(e);
      throw error;
    }
  }
}

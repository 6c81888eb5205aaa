package tkrzw;

import io.kuradb.Native;

/**
 * A file read and written at offsets, as the reference's {@code tkrzw.File},
 * over kuradb's file layer: memory mapping ({@code MemoryMapParallelFile}, the default as
 * the reference's, {@code MemoryMapAtomicFile}) or positional I/O
 * ({@code PositionalParallelFile}, {@code PositionalAtomicFile}, with
 * {@code block_size} and {@code access_options} {@code direct}, {@code sync},
 * {@code padding}, {@code pagecache}). It is what
 * {@link DBM#exportToFlatRecords(File)} and the other flat-record methods
 * take. {@code open} creates a missing file when writable and takes
 * {@code truncate}, {@code no_create}, {@code no_wait}, {@code no_lock},
 * {@code file} (the class), {@code block_size}, {@code access_options}, …;
 * {@code close} pads the file first if asked to. All methods may be called
 * from several threads at once; using a file that is not open answers
 * PRECONDITION_ERROR.
 */
public class File extends NativeHandle {
  /** A file, not yet open. */
  public File() {
    super("file", Native::fileOpen, Native::fileClose, Native::fileFree);
  }

  /**
   * Reads into {@code buf}.
   *
   * @param off the offset
   * @param buf the buffer
   * @param size how many bytes to read
   * @return the status; INFEASIBLE_ERROR if the region goes past the end
   */
  public Status read(long off, byte[] buf, long size) {
    return Calls.status(this, () -> {
      byte[] data = Native.fileRead(handle(), off, size);
      System.arraycopy(data, 0, buf, 0, data.length);
    });
  }

  /**
   * @param off the offset
   * @param size how many bytes to read
   * @param status receives the outcome, or null
   * @return the bytes, or null on failure
   */
  public byte[] read(long off, long size, Status status) {
    return Calls.reporting(this, status, () -> Native.fileRead(handle(), off, size), null);
  }

  /**
   * @param off the offset
   * @param size how many bytes to read
   * @return the bytes, or null on failure
   */
  public byte[] read(long off, long size) {
    return read(off, size, null);
  }

  /**
   * @param off the offset
   * @param size how many bytes to read
   * @param status receives the outcome, or null
   * @return the bytes as UTF-8, or null on failure
   */
  public String readString(long off, long size, Status status) {
    return Convert.text(read(off, size, status));
  }

  /**
   * @param off the offset
   * @param size how many bytes to read
   * @return the bytes as UTF-8, or null on failure
   */
  public String readString(long off, long size) {
    return readString(off, size, null);
  }

  /**
   * Writes the first {@code size} bytes of {@code buf} at {@code off}, extending the file if needed.
   *
   * @param off the offset
   * @param buf the data
   * @param size how many of its bytes
   * @return the status
   */
  public Status write(long off, byte[] buf, long size) {
    byte[] data = Convert.prefix(buf, size);
    return Calls.status(this, () -> Native.fileWrite(handle(), off, data));
  }

  /**
   * @param off the offset
   * @param buf the data
   * @return the status
   */
  public Status write(long off, byte[] buf) {
    return write(off, buf, buf.length);
  }

  /**
   * @param off the offset
   * @param str the data, written as UTF-8
   * @return the status
   */
  public Status write(long off, String str) {
    return write(off, Convert.utf8(str));
  }

  /**
   * Writes at the end of the file.
   *
   * @param buf the data
   * @param size how many of its bytes
   * @param status receives the outcome, or null
   * @return the offset it went to, or -1 on failure
   */
  public long append(byte[] buf, long size, Status status) {
    byte[] data = Convert.prefix(buf, size);
    return Calls.reporting(this, status, () -> Native.fileAppend(handle(), data), -1L);
  }

  /**
   * @param buf the data
   * @return the offset it went to, or -1 on failure
   */
  public long append(byte[] buf) {
    return append(buf, buf.length, null);
  }

  /**
   * @param str the data, written as UTF-8
   * @return the offset it went to, or -1 on failure
   */
  public long append(String str) {
    return append(Convert.utf8(str));
  }

  /**
   * @param size the new size: the file is cut, or extended with zeros
   * @return the status
   */
  public Status truncate(long size) {
    return Calls.status(this, () -> Native.fileTruncate(handle(), size));
  }

  /**
   * Hands the file's data to the OS, and with {@code hard} to the device.
   * kuradb synchronizes the whole file whatever the region.
   *
   * @param hard whether to wait for the device
   * @param off the region's offset (the whole file is synchronized)
   * @param size the region's size (the whole file is synchronized)
   * @return the status
   */
  public Status synchronize(boolean hard, long off, long size) {
    return Calls.status(this, () -> Native.fileSynchronize(handle(), hard));
  }

  /**
   * @param hard whether to wait for the device
   * @return the status
   */
  public Status synchronize(boolean hard) {
    return synchronize(hard, 0, 0);
  }

  /** @return the file's size, or -1 on failure */
  public long getSize() {
    return Calls.reporting(this, null, () -> Native.fileGetSize(handle()), -1L);
  }

  /** @return the file's path, or null on failure */
  public String getPath() {
    return Calls.reporting(this, null, () -> Native.filePath(handle()), null);
  }

  /**
   * The lines of the file that match, in the order of the lines' bytes
   * (kuradb's difference: a line found twice is answered once).
   *
   * @param mode contain, begin, end, regex, edit, editbin, …
   * @param pattern the pattern
   * @param capacity the most lines (0: all)
   * @return the matching lines
   * @throws StatusException on failure (INVALID_ARGUMENT_ERROR for an unknown mode)
   */
  public byte[][] search(String mode, byte[] pattern, int capacity) {
    Status status = new Status();
    byte[][] lines = Calls.reporting(
        this, status, () -> Native.fileSearch(handle(), mode, pattern, capacity), null);
    status.orDie();
    return lines;
  }

  /**
   * @param mode the mode
   * @param pattern the pattern, as UTF-8
   * @param capacity the most lines (0: all)
   * @return the matching lines as strings
   * @throws StatusException on failure
   */
  public String[] search(String mode, String pattern, int capacity) {
    return Convert.texts(search(mode, Convert.utf8(pattern), capacity));
  }

  /** @return {@code tkrzw.File(class=..., path=..., size=N)}, or {@code tkrzw.File(unopened)} */
  @Override
  public String toString() {
    long h = currentHandle();
    if (h == 0) {
      return "tkrzw.File(unopened)";
    }
    return "tkrzw.File(class=" + Calls.reporting(this, null, () -> Native.fileClassName(h), "unknown")
        + ", path=" + getPath() + ", size=" + getSize() + ")";
  }
}

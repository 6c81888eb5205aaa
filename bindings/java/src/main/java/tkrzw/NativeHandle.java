package tkrzw;

import io.kuradb.Native;
import java.util.Map;
import java.util.function.LongConsumer;

/**
 * The life of an object that owns one native handle, as {@link File} and
 * {@link Index} do: open makes the handle, close ends it, and the
 * {@link Calls#CLEANER} frees its memory once the object is unreachable.
 * Open and close hold the object's lock, so neither sees the other half
 * done; the other methods read the volatile handle and may run at once.
 */
abstract class NativeHandle {
  static {
    Native.load();
  }

  /** Makes a native handle: the open natives' shape. */
  interface Opener {
    long open(String path, boolean writable, String[] params);
  }

  /** What the object is, in messages: "file", "index". */
  private final String noun;

  private final Opener opener;
  private final LongConsumer closer;
  /** Frees a handle's memory; a static native, so the cleaning action holds no reference to the object. */
  private final LongConsumer freer;

  private volatile long handle;

  NativeHandle(String noun, Opener opener, LongConsumer closer, LongConsumer freer) {
    this.noun = noun;
    this.opener = opener;
    this.closer = closer;
    this.freer = freer;
  }

  /** @return the open handle; throws {@link Calls.NotOpen} (PRECONDITION_ERROR) if not open */
  long handle() {
    long h = handle;
    if (h == 0) {
      throw new Calls.NotOpen(noun);
    }
    return h;
  }

  /** @return the handle, or 0 if the object is not open */
  long currentHandle() {
    return handle;
  }

  /** Closes the object if it is open. */
  public void destruct() {
    if (handle != 0) {
      close();
    }
  }

  /**
   * Opens the object.
   *
   * @param path the path (the class's documentation says what an empty one does)
   * @param writable whether to open for writing
   * @param params the parameters the class's documentation lists, or null
   * @return the status; PRECONDITION_ERROR if it is open already
   */
  public synchronized Status open(String path, boolean writable, Map<String, String> params) {
    if (handle != 0) {
      return new Status(Status.PRECONDITION_ERROR, "opened " + noun);
    }
    LongConsumer free = freer;
    return Calls.status(this, () -> {
      String[] flat = Convert.flatten(Utility.openParams(path, params));
      long h = opener.open(path, writable, flat);
      Calls.CLEANER.register(this, () -> free.accept(h));
      handle = h;
    });
  }

  /**
   * @param path the path
   * @param writable whether to open for writing
   * @param params the parameters as {@code "key=value,key=value"}
   * @return the status
   */
  public Status open(String path, boolean writable, String params) {
    return open(path, writable, Utility.parseParams(params));
  }

  /**
   * @param path the path
   * @param writable whether to open for writing
   * @return the status
   */
  public Status open(String path, boolean writable) {
    return open(path, writable, (Map<String, String>) null);
  }

  /** @return the status of closing; PRECONDITION_ERROR if it was not open */
  public synchronized Status close() {
    long h = handle;
    if (h == 0) {
      return new Status(Status.PRECONDITION_ERROR, "not opened " + noun);
    }
    handle = 0;
    return Calls.status(this, () -> closer.accept(h));
  }
}

package tkrzw;

import io.kuradb.KuraException;
import io.kuradb.Native;
import java.lang.ref.Reference;

/**
 * The result of an {@link AsyncDBM} operation to come, as the reference's
 * {@code tkrzw.Future}: {@link #get()} waits for it and answers a
 * {@link Status} (set, remove, …) or a {@link Status.And} of the status and
 * the value (get, increment, search, …), as each method of {@code AsyncDBM}
 * documents. kuradb's difference: {@code get} may be called again and
 * answers the same result. For one thread at a time.
 *
 * @param <T> what {@link #get()} answers
 */
public class Future<T> {
  static {
    Native.load();
  }

  /** Turns a task's outcome into what {@code get} answers. */
  interface Decoder<T> {
    /**
     * @param status the task's status
     * @param outcome what the task answered, or null if it failed
     * @return the result
     */
    T decode(Status status, byte[][] outcome);
  }

  private final long handle;
  private final Decoder<T> decoder;
  private boolean collected;
  private T result;

  Future(long handle, Decoder<T> decoder) {
    this.handle = handle;
    this.decoder = decoder;
    Calls.CLEANER.register(this, () -> Native.futureFree(handle));
  }

  /** A future that failed before its task was queued (the AsyncDBM was destructed, say). */
  Future(Status failure, Decoder<T> decoder) {
    this.handle = 0;
    this.decoder = decoder;
    this.collected = true;
    this.result = decoder.decode(failure, null);
  }

  /** Releases the future; its operation still runs. Later calls of {@code get} answer CANCELED_ERROR. */
  public synchronized void destruct() {
    if (!collected) {
      collected = true;
      result = decoder.decode(new Status(Status.CANCELED_ERROR, "the future was destructed"), null);
    }
  }

  /**
   * Waits for the operation.
   *
   * @param timeout the longest wait in seconds; negative: no limit
   * @return whether the operation is done
   */
  public boolean await(double timeout) {
    synchronized (this) {
      if (collected) {
        return true;
      }
    }
    try {
      return Native.futureAwait(handle, timeout);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Waits for the operation and answers its result.
   *
   * @return the status, or the status and the value, by the operation
   */
  public synchronized T get() {
    if (!collected) {
      Status status = new Status();
      byte[][] outcome = null;
      try {
        outcome = Native.futureGet(handle);
      } catch (KuraException e) {
        status = Status.of(e);
      } finally {
        Reference.reachabilityFence(this);
      }
      result = decoder.decode(status, outcome);
      collected = true;
    }
    return result;
  }

  /** @return {@code tkrzw.Future(pending)} or {@code tkrzw.Future(done)} */
  @Override
  public String toString() {
    return "tkrzw.Future(" + (await(0) ? "done" : "pending") + ")";
  }
}

package tkrzw;

import io.kuradb.KuraException;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;

/**
 * What the {@code tkrzw} classes share around their native calls: turning
 * a {@link KuraException} (or an object that is not open) into a
 * {@link Status}, keeping the caller reachable while its handle is in use,
 * and the {@link Cleaner} that frees native handles.
 */
final class Calls {
  private Calls() {}

  /** Frees the native handles of unreachable objects. */
  static final Cleaner CLEANER = Cleaner.create();

  /** An object used while not open: answered as PRECONDITION_ERROR. */
  static final class NotOpen extends RuntimeException {
    private static final long serialVersionUID = 1L;

    NotOpen(String what) {
      super("not opened " + what, null, false, false);
    }
  }

  /** An operation without a result. */
  interface Op {
    void run();
  }

  /** An operation with a result. */
  interface Fn<T> {
    T run();
  }

  /** The status of an error. */
  static Status failure(RuntimeException e) {
    if (e instanceof KuraException) {
      return Status.of((KuraException) e);
    }
    return new Status(Status.PRECONDITION_ERROR, e.getMessage());
  }

  /**
   * Runs {@code op} and answers its outcome as a status.
   *
   * @param owner the object whose handle {@code op} uses, kept reachable until it returns
   */
  static Status status(Object owner, Op op) {
    try {
      op.run();
      return new Status();
    } catch (KuraException | NotOpen e) {
      return failure(e);
    } finally {
      Reference.reachabilityFence(owner);
    }
  }

  /**
   * Runs {@code fn}, reports its outcome into {@code status} (if not null)
   * and answers its result, or {@code onFailure} if it failed.
   */
  static <T> T reporting(Object owner, Status status, Fn<T> fn, T onFailure) {
    try {
      T value = fn.run();
      Convert.report(status, new Status());
      return value;
    } catch (KuraException | NotOpen e) {
      Convert.report(status, failure(e));
      return onFailure;
    } finally {
      Reference.reachabilityFence(owner);
    }
  }

  /**
   * Runs a yes-or-no operation: SUCCESS where it answers yes, {@code whenNo}
   * where it answers no, the error's status where it fails.
   */
  static Status check(Object owner, Fn<Boolean> fn, Status.Code whenNo) {
    Status status = new Status();
    Boolean yes = reporting(owner, status, fn, null);
    return Boolean.FALSE.equals(yes) ? new Status(whenNo) : status;
  }

  /**
   * Runs an operation answering a value or null: its status ({@code whenNull}
   * where the value is null) and the value.
   */
  static <T> Status.And<T> and(Object owner, Fn<T> fn, Status.Code whenNull) {
    Status status = new Status();
    T value = reporting(owner, status, fn, null);
    if (value == null && status.isOK()) {
      status = new Status(whenNull);
    }
    return new Status.And<>(status, value);
  }
}

package io.kuradb;

/**
 * An error of kuradb: its {@link Kind}, the message naming the operation and
 * its object, and (in {@link #getMessage()}) the whole text with the kind and
 * any operating-system error. A missing record is not an error: lookups
 * answer null.
 */
public class KuraException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** What went wrong, in categories a program can act on (the core's {@code ErrorKind}). */
  public enum Kind {
    /** A record, file or other named thing does not exist. */
    NOT_FOUND,
    /** A record or file already exists and was not to be overwritten. */
    DUPLICATION,
    /** An argument or parameter is malformed or out of range. */
    INVALID_ARGUMENT,
    /** The operation cannot be done in the current state (a closed database, a write to a read-only one). */
    INFEASIBLE,
    /** Stored data is inconsistent: a corrupt or truncated file. */
    BROKEN_DATA,
    /** The file is locked by someone else and waiting was refused. */
    WOULD_BLOCK,
    /** The operating system refused an operation. */
    SYSTEM,
    /** The feature is not supported by this database or platform. */
    NOT_IMPLEMENTED,
    /** A callback asked to stop, or failed. */
    CANCELED,
    /**
     * A transaction's commit found that another commit changed what it read since it began
     * (its status code is the reference's INFEASIBLE_ERROR); run it again.
     */
    CONFLICT,
    /** A kind this version of the Java classes does not know. */
    UNKNOWN
  }

  private final Kind kind;
  private final String detail;
  private final int statusCode;

  /**
   * An error of {@code kind}.
   *
   * @param kind the kind
   * @param detail the message without the kind
   */
  public KuraException(Kind kind, String detail) {
    super(kind.name().toLowerCase().replace('_', ' ') + ": " + detail);
    this.kind = kind;
    this.detail = detail;
    this.statusCode = -1;
  }

  /** Made by the native library: the kind's name, the message, the whole text, the status code. */
  KuraException(String kindName, String detail, String text, int statusCode) {
    super(text);
    Kind k;
    try {
      k = Kind.valueOf(kindName);
    } catch (IllegalArgumentException e) {
      k = Kind.UNKNOWN;
    }
    this.kind = k;
    this.detail = detail;
    this.statusCode = statusCode;
  }

  /** @return what went wrong, as a category */
  public Kind kind() {
    return kind;
  }

  /**
   * @return the reference's status code of the error, as the binding core
   *     maps kinds to codes (-1 for an exception made in Java)
   */
  public int statusCode() {
    return statusCode;
  }

  /** @return the message without the kind: the operation and its object */
  public String detail() {
    return detail;
  }
}

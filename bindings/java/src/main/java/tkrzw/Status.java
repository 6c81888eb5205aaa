package tkrzw;

import io.kuradb.KuraException;

/**
 * The outcome of an operation, as the reference's {@code tkrzw.Status}: a
 * code and a message.
 */
public class Status {
  /** The status codes, with the reference's numbers. */
  public enum Code {
    /** Success. */
    SUCCESS(0),
    /** Generic error whose cause is unknown. */
    UNKNOWN_ERROR(1),
    /** Generic error from underlying systems. */
    SYSTEM_ERROR(2),
    /** The feature is not implemented. */
    NOT_IMPLEMENTED_ERROR(3),
    /** A precondition is not met. */
    PRECONDITION_ERROR(4),
    /** A given argument is invalid. */
    INVALID_ARGUMENT_ERROR(5),
    /** The operation is canceled. */
    CANCELED_ERROR(6),
    /** A specific resource is not found. */
    NOT_FOUND_ERROR(7),
    /** The operation is not permitted. */
    PERMISSION_ERROR(8),
    /** The operation is infeasible. */
    INFEASIBLE_ERROR(9),
    /** A specific resource is duplicated. */
    DUPLICATION_ERROR(10),
    /** Internal data are broken. */
    BROKEN_DATA_ERROR(11),
    /** Network error. */
    NETWORK_ERROR(12),
    /** Error caused by the application logic. */
    APPLICATION_ERROR(13);

    private final int number;

    Code(int number) {
      this.number = number;
    }

    /** @return the reference's number of the code */
    public int getNumber() {
      return number;
    }

    /**
     * The code of a number, as the reference's {@code Status.Code.valueOf(int)}.
     *
     * @param number the reference's number of a code
     * @return the code, or null if no code has that number
     */
    public static Code valueOf(int number) {
      for (Code code : values()) {
        if (code.number == number) {
          return code;
        }
      }
      return null;
    }
  }

  /** Success. */
  public static final Code SUCCESS = Code.SUCCESS;
  /** Generic error whose cause is unknown. */
  public static final Code UNKNOWN_ERROR = Code.UNKNOWN_ERROR;
  /** Generic error from underlying systems. */
  public static final Code SYSTEM_ERROR = Code.SYSTEM_ERROR;
  /** The feature is not implemented. */
  public static final Code NOT_IMPLEMENTED_ERROR = Code.NOT_IMPLEMENTED_ERROR;
  /** A precondition is not met. */
  public static final Code PRECONDITION_ERROR = Code.PRECONDITION_ERROR;
  /** A given argument is invalid. */
  public static final Code INVALID_ARGUMENT_ERROR = Code.INVALID_ARGUMENT_ERROR;
  /** The operation is canceled. */
  public static final Code CANCELED_ERROR = Code.CANCELED_ERROR;
  /** A specific resource is not found. */
  public static final Code NOT_FOUND_ERROR = Code.NOT_FOUND_ERROR;
  /** The operation is not permitted. */
  public static final Code PERMISSION_ERROR = Code.PERMISSION_ERROR;
  /** The operation is infeasible. */
  public static final Code INFEASIBLE_ERROR = Code.INFEASIBLE_ERROR;
  /** A specific resource is duplicated. */
  public static final Code DUPLICATION_ERROR = Code.DUPLICATION_ERROR;
  /** Internal data are broken. */
  public static final Code BROKEN_DATA_ERROR = Code.BROKEN_DATA_ERROR;
  /** Network error. */
  public static final Code NETWORK_ERROR = Code.NETWORK_ERROR;
  /** Error caused by the application logic. */
  public static final Code APPLICATION_ERROR = Code.APPLICATION_ERROR;

  private Code code;
  private String message;

  /** A success. */
  public Status() {
    this(SUCCESS, "");
  }

  /**
   * A status of {@code code} without a message.
   *
   * @param code the code
   */
  public Status(Code code) {
    this(code, "");
  }

  /**
   * A status.
   *
   * @param code the code
   * @param message the message
   */
  public Status(Code code, String message) {
    this.code = code;
    this.message = message == null ? "" : message;
  }

  /** @return the code */
  public Code getCode() {
    return code;
  }

  /** @return the message */
  public String getMessage() {
    return message;
  }

  /**
   * Sets the code and the message.
   *
   * @param code the code
   * @param message the message
   */
  public void set(Code code, String message) {
    this.code = code;
    this.message = message == null ? "" : message;
  }

  /**
   * Takes {@code rhs}'s code and message if this status is a success.
   *
   * @param rhs the other status
   */
  public void join(Status rhs) {
    if (code == SUCCESS) {
      set(rhs.code, rhs.message);
    }
  }

  /** @return the code's name, then ": " and the message if there is one */
  @Override
  public String toString() {
    return message.isEmpty() ? code.name() : code.name() + ": " + message;
  }

  /**
   * @param rhs another status
   * @return whether the codes are equal
   */
  public boolean equals(Status rhs) {
    return rhs != null && rhs.code == code;
  }

  /**
   * @param rhs a code
   * @return whether it is this status's code
   */
  public boolean equals(Code rhs) {
    return rhs == code;
  }

  @Override
  public boolean equals(Object rhs) {
    if (rhs instanceof Status) {
      return equals((Status) rhs);
    }
    return rhs instanceof Code && equals((Code) rhs);
  }

  @Override
  public int hashCode() {
    return code.hashCode();
  }

  @Override
  public Status clone() {
    return new Status(code, message);
  }

  /** @return whether the status is a success */
  public boolean isOK() {
    return code == SUCCESS;
  }

  /**
   * Throws a {@link StatusException} unless the status is a success.
   *
   * @throws StatusException holding this status
   */
  public void orDie() {
    if (code != SUCCESS) {
      throw new StatusException(this);
    }
  }

  /**
   * A status and a value, as methods that answer both return them.
   *
   * @param <T> the value's type
   */
  public static class And<T> {
    /** The status. */
    public Status status;
    /** The value. */
    public T value;

    /** An empty pair (a success and null). */
    public And() {
      this.status = new Status();
    }

    /**
     * A pair.
     *
     * @param status the status
     * @param value the value
     */
    public And(Status status, T value) {
      this.status = status;
      this.value = value;
    }

    @Override
    public String toString() {
      return "(" + status + ", " + value + ")";
    }
  }

  /**
   * The status of a kuradb error: the code the binding core maps its kind
   * to (a write to a database opened for reading is PRECONDITION_ERROR, as
   * the reference says), and its message.
   */
  static Status of(KuraException e) {
    Code code = Code.valueOf(e.statusCode());
    return new Status(code == null ? UNKNOWN_ERROR : code, e.detail());
  }
}

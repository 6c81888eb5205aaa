package tkrzw;

/** An exception holding a failed {@link Status}, as {@link Status#orDie()} throws it. */
public class StatusException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final Status status;

  /**
   * @param status the status
   */
  public StatusException(Status status) {
    super(status.toString());
    this.status = status;
  }

  /** @return the status */
  public Status getStatus() {
    return status;
  }
}

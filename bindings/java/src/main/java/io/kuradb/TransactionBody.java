package io.kuradb;

/**
 * The work of a transaction that {@link Dbm#run} runs, and runs again in a new
 * transaction when a commit conflicts.
 *
 * @param <T> what the work answers
 */
@FunctionalInterface
public interface TransactionBody<T> {
  /**
   * Does the work in {@code tx}; {@link Dbm#run} commits it afterwards unless
   * the work committed or aborted it itself.
   *
   * @param tx the transaction
   * @return what {@link Dbm#run} answers
   */
  T run(Transaction tx);
}

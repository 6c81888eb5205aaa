package io.kuradb;

/**
 * How durable a transaction's or batch's commit is when it returns (see
 * docs/transactions.md, "Durability").
 */
public enum Durability {
  /** Applied and atomic, its log record kept in the process: a crash may lose it, whole. */
  NONE,
  /** Its log record handed to the operating system: it survives the process's crash. */
  OS,
  /** Its log record on the device: it survives a power cut. */
  SYNC
}

package io.kuradb;

/**
 * The native methods of kuradb's JNI library, one per operation of the Rust
 * core. Internal: use {@link Dbm} (or the {@code tkrzw} package) instead. It
 * is public only so that the {@code tkrzw} package can reach it.
 *
 * <p>Handles are addresses of Rust objects. {@code close}/{@code cursorClose}
 * empty them (a second close does nothing, later calls throw); {@code free}
 * and {@code cursorFree} release their memory and must be called once, by the
 * owner's {@link java.lang.ref.Cleaner}, when nothing can use them any more.
 */
public final class Native {
  static {
    NativeLoader.load();
  }

  private Native() {}

  /** A record processor as the natives call it. */
  @FunctionalInterface
  public interface Callback {
    /**
     * Decides what to do with a record.
     *
     * @param index the index of the key in a multi call's list (0 otherwise)
     * @param key the record's key
     * @param value its value, or null if it is absent
     * @return null to keep it, the remove marker to remove it, or the new value
     */
    byte[] call(int index, byte[] key, byte[] value);
  }

  /** Makes sure the library is loaded (running this class's initializer). */
  public static void load() {}

  /**
   * The handle of an open {@link Dbm}, for the {@code tkrzw} package. The
   * caller must keep {@code db} reachable while it uses the handle.
   *
   * @param db the database
   * @return its handle
   */
  public static long handleOf(Dbm db) {
    return db.handle;
  }

  /**
   * The handle of a {@link Cursor}, for the {@code tkrzw} package.
   *
   * @param cursor the cursor
   * @return its handle
   */
  public static long handleOf(Cursor cursor) {
    return cursor.handle;
  }

  public static native long open(String path, boolean writable, String[] params);
  public static native void close(long db);
  public static native void free(long db);
  public static native boolean isOpen(long db);
  public static native byte[] get(long db, byte[] key);
  public static native boolean contains(long db, byte[] key);
  public static native boolean set(long db, byte[] key, byte[] value, boolean overwrite);
  public static native boolean remove(long db, byte[] key);
  public static native boolean setWithTtl(long db, byte[] key, byte[] value, boolean overwrite, long ttlMillis);
  public static native boolean expire(long db, byte[] key, long ttlMillis);
  public static native boolean expireAt(long db, byte[] key, long unixMillis);
  public static native boolean persist(long db, byte[] key);
  public static native long expiryMillis(long db, byte[] key);
  public static native long nowMillis(long db);
  public static native boolean hasExpiry(long db);
  public static native long[] sweep(long db, long maxRecords);
  public static native void startSweeper(long db, long recordsPerSecond);
  public static native long stopSweeper(long db);
  public static native void append(long db, byte[] key, byte[] value, byte[] delimiter);
  public static native long increment(long db, byte[] key, long delta, long initial);
  public static native long incrementAsReference(long db, byte[] key, long delta, long initial);
  public static native byte[][] compareExchange(
      long db, byte[] key, byte[] expected, boolean expectAny, byte[] desired, boolean keep);
  public static native byte[][] setAndGet(long db, byte[] key, byte[] value, boolean overwrite);
  public static native byte[] removeAndGet(long db, byte[] key);
  public static native void process(
      long db, byte[] key, Callback callback, byte[] removeMarker, boolean writable);
  public static native void processEach(
      long db, Callback callback, byte[] removeMarker, boolean writable);
  public static native boolean processFirst(
      long db, Callback callback, byte[] removeMarker, boolean writable);
  public static native long count(long db);
  public static native long fileSize(long db);
  public static native String path(long db);
  public static native String className(long db, boolean reference);
  public static native void clear(long db);
  public static native void rebuild(long db, String[] params);
  public static native boolean shouldBeRebuilt(long db);
  public static native void synchronize(long db, boolean hard);
  public static native void copyFileData(long db, String dest, boolean hard);
  public static native String[] inspect(long db);
  public static native boolean isHealthy(long db);
  public static native boolean isOrdered(long db);
  public static native byte[][] search(long db, String mode, byte[] pattern, int capacity);
  public static native byte[][] popFirst(long db);
  public static native byte[] pushLast(long db, byte[] value, double wtime);

  public static native byte[][] getMulti(long db, byte[][] keys);
  public static native boolean setMulti(long db, byte[][] keys, byte[][] values, boolean overwrite);
  public static native int removeMulti(long db, byte[][] keys);
  public static native void appendMulti(long db, byte[][] keys, byte[][] values, byte[] delimiter);
  public static native boolean compareExchangeMulti(
      long db, byte[][] expectedKeys, byte[][] expectedValues, byte[] anyMarker,
      byte[][] desiredKeys, byte[][] desiredValues);
  public static native void processMulti(
      long db, byte[][] keys, Callback callback, byte[] removeMarker, boolean writable);
  public static native void rekey(
      long db, byte[] oldKey, byte[] newKey, boolean overwrite, boolean copying);
  public static native void export(long db, long dest);
  public static native void exportToFile(long db, String path, boolean keysOnly);
  public static native long importFromFile(long db, String path);
  public static native long restore(String src, String dest, String[] params);

  public static native long cursorNew(long db);
  public static native void cursorClose(long cursor);
  public static native void cursorFree(long cursor);
  public static native void cursorFirst(long cursor);
  public static native void cursorLast(long cursor);
  public static native void cursorJump(long cursor, byte[] key);
  public static native void cursorJumpLower(long cursor, byte[] key, boolean inclusive);
  public static native void cursorJumpUpper(long cursor, byte[] key, boolean inclusive);
  public static native void cursorNext(long cursor);
  public static native void cursorPrevious(long cursor);
  public static native byte[][] cursorGet(long cursor);
  public static native byte[][] cursorStep(long cursor);
  public static native void cursorSet(long cursor, byte[] value);
  public static native void cursorRemove(long cursor);

  public static native String version();

  /** An integer as the reference's 8 big-endian bytes. */
  public static native byte[] serializeInt(long num);

  /** The integer of a big-endian sequence, as the reference reads it. */
  public static native long deserializeInt(byte[] data);

  /** A floating-point number as the reference's 8 big-endian bytes. */
  public static native byte[] serializeFloat(double num);

  /** The number of a big-endian IEEE single or double (else NaN). */
  public static native double deserializeFloat(byte[] data);

  /** The reference's rebuild parameters (name, value, ...) in kuradb's terms, the same flat way. */
  public static native String[] rebuildParams(String[] params);

  /** The size of a memory page. */
  public static native long pageSize();

  /**
   * The parameters of a compat open of {@code path}, the same flat way: translated, waiting for
   * the lock unless {@code no_wait}, without {@code key_comparator} when reopening a tree.
   */
  public static native String[] compatOpenParams(String path, String[] params);
  public static native long primaryHash(byte[] data, long numBuckets);
  public static native long secondaryHash(byte[] data, long numShards);
  public static native int editDistanceLev(String a, String b);
  public static native long memoryUsage();
  public static native long memoryCapacity();

  public static native void synchronizeWith(long db, boolean hard, String[] params);
  public static native void exportToFileObject(long db, long file, boolean keysOnly);
  public static native long importFromFileObject(long db, long file);

  public static native long fileOpen(String path, boolean writable, String[] params);
  public static native void fileClose(long file);
  public static native void fileFree(long file);
  public static native byte[] fileRead(long file, long offset, long size);
  public static native void fileWrite(long file, long offset, byte[] data);
  public static native long fileAppend(long file, byte[] data);
  public static native void fileTruncate(long file, long size);
  public static native void fileSynchronize(long file, boolean hard);
  public static native long fileGetSize(long file);
  public static native String filePath(long file);
  public static native String fileClassName(long file);
  public static native byte[][] fileSearch(long file, String mode, byte[] pattern, int capacity);

  public static native long indexOpen(String path, boolean writable, String[] params);
  public static native void indexClose(long index);
  public static native void indexFree(long index);
  public static native boolean indexContains(long index, byte[] key, byte[] value);
  public static native byte[][] indexGetValues(long index, byte[] key, int max);
  public static native void indexAdd(long index, byte[] key, byte[] value);
  public static native boolean indexRemove(long index, byte[] key, byte[] value);
  public static native long indexCount(long index);
  public static native String indexPath(long index);
  public static native void indexClear(long index);
  public static native void indexRebuild(long index);
  public static native void indexSynchronize(long index, boolean hard);
  public static native boolean indexIsWritable(long index);
  public static native byte[][] indexStep(long index, int step, byte[] key, byte[] value);

  public static native long asyncNew(long db, int threads);
  public static native void asyncDestruct(long async);
  public static native void asyncFree(long async);
  public static native long asyncGet(long async, byte[] key);
  public static native long asyncGetMulti(long async, byte[][] keys);
  public static native long asyncSet(long async, byte[] key, byte[] value, boolean overwrite);
  public static native long asyncSetMulti(long async, byte[][] keys, byte[][] values, boolean overwrite);
  public static native long asyncSetAbsentMulti(long async, byte[][] keys, byte[][] values);
  public static native long asyncRemove(long async, byte[] key);
  public static native long asyncRemoveMulti(long async, byte[][] keys);
  public static native long asyncAppend(long async, byte[] key, byte[] value, byte[] delimiter);
  public static native long asyncAppendMulti(long async, byte[][] keys, byte[][] values, byte[] delimiter);
  public static native long asyncCompareExchange(long async, byte[] key, byte[] expected, byte[] desired);
  public static native long asyncIncrement(long async, byte[] key, long delta, long initial);
  public static native long asyncIncrementAsReference(long async, byte[] key, long delta, long initial);
  public static native long asyncCompareExchangeMulti(
      long async, byte[][] expectedKeys, byte[][] expectedValues,
      byte[][] desiredKeys, byte[][] desiredValues);
  public static native long asyncClear(long async);
  public static native long asyncRebuild(long async, String[] params);
  public static native long asyncSynchronize(long async, boolean hard, String[] params);
  public static native long asyncCopyFileData(long async, String dest, boolean hard);
  public static native long asyncExport(long async, long destDb);
  public static native long asyncExportToFile(long async, long file);
  public static native long asyncImportFromFile(long async, long file);
  public static native long asyncSearch(long async, String mode, byte[] pattern, int capacity);

  public static native long asyncRekey(
      long async, byte[] oldKey, byte[] newKey, boolean overwrite, boolean copying);
  public static native long asyncPopFirst(long async);
  public static native long asyncPushLast(long async, byte[] value, double wtime);

  public static native long txBegin(long db, int durability);
  public static native void txFree(long tx);
  public static native byte[] txGet(long tx, byte[] key);
  public static native void txSet(long tx, byte[] key, byte[] value);
  public static native boolean txRemove(long tx, byte[] key);
  public static native void txAppend(long tx, byte[] key, byte[] value, byte[] delimiter);
  public static native long txIncrement(long tx, byte[] key, long delta, long initial);
  public static native long txSavepoint(long tx);
  public static native void txRollbackTo(long tx, long savepoint);
  public static native void txCommit(long tx);
  public static native void txAbort(long tx);
  public static native boolean txIsActive(long tx);

  public static native long snapshotOpen(long db);
  public static native void snapshotFree(long snapshot);
  public static native void snapshotRelease(long snapshot);
  public static native boolean snapshotIsActive(long snapshot);
  public static native byte[] snapshotGet(long snapshot, byte[] key);
  public static native byte[][] snapshotItems(long snapshot);
  public static native byte[][] snapshotKeys(long snapshot);
  public static native long snapshotCount(long snapshot);

  public static native long batchNew();
  public static native void batchFree(long batch);
  public static native void batchSet(long batch, byte[] key, byte[] value);
  public static native void batchRemove(long batch, byte[] key);
  public static native void batchAppend(long batch, byte[] key, byte[] value, byte[] delimiter);
  public static native void batchIncrement(long batch, byte[] key, long delta, long initial);
  public static native void batchCommit(long batch, long db, int durability);
  public static native void batchDiscard(long batch);
  public static native boolean batchIsActive(long batch);
  public static native int batchSize(long batch);

  public static native boolean futureAwait(long future, double timeout);
  public static native byte[][] futureGet(long future);
  public static native void futureFree(long future);
}

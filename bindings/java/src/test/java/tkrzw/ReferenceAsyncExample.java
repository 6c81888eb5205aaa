package tkrzw;

/**
 * A program written against the reference's Java API only, in the style of
 * tkrzw-java's example/Example3.java (the asynchronous API): it must compile
 * and run unchanged against kuradb's jar.
 */
public class ReferenceAsyncExample {
  public static void main(String[] args) {
    String path = args.length > 0 ? args[0] : "casket.tkh";
    DBM dbm = new DBM();
    dbm.open(path, true, "truncate=True,num_buckets=100");

    AsyncDBM async = new AsyncDBM(dbm, 4);

    Future<Status> setFuture = async.set("hello", "world");
    System.out.println("Setting a record");
    Status status = setFuture.get();
    if (!status.isOK()) {
      System.out.println("ERROR: " + status.toString());
    }

    Future<Status.And<String>> getFuture = async.get("hello");
    System.out.println("Getting a record");
    Status.And<String> getResult = getFuture.get();
    if (getResult.status.isOK()) {
      System.out.println("VALUE: " + getResult.value);
    }

    async.destruct();
    dbm.close();
  }
}

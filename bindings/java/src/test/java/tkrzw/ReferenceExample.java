package tkrzw;

/**
 * A program written against the reference's Java API only (in the style of
 * tkrzw-java's example/Example1.java): it must compile and run unchanged
 * against kuradb's jar.
 */
public class ReferenceExample {
  public static void main(String[] args) {
    String path = args.length > 0 ? args[0] : "casket.tkh";
    DBM dbm = new DBM();
    dbm.open(path, true, "truncate=true,num_buckets=100").orDie();

    dbm.set("first", "hop");
    dbm.set("second", "step");
    dbm.set("third", "jump");

    System.out.println(dbm.get("first"));
    System.out.println(dbm.get("second"));
    System.out.println(dbm.get("third"));
    System.out.println(dbm.get("fourth"));

    Iterator iter = dbm.makeIterator();
    iter.first();
    while (true) {
      String[] record = iter.getString();
      if (record == null) {
        break;
      }
      System.out.println(record[0] + ": " + record[1]);
      iter.next();
    }
    iter.destruct();

    dbm.close();
    dbm.destruct();
  }
}

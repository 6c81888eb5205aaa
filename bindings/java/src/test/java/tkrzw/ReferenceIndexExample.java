package tkrzw;

/**
 * A program written against the reference's Java API only, in the style of
 * tkrzw-java's example/Example6.java (the secondary index): it must compile
 * and run unchanged against kuradb's jar.
 */
public class ReferenceIndexExample {
  public static void main(String[] args) {
    String path = args.length > 0 ? args[0] : "casket.tkt";
    Index index = new Index();
    index.open(path, true, "truncate=True,num_buckets=100").orDie();

    // The key is a division and the value a person.
    index.add("general", "anne").orDie();
    index.add("general", "matthew").orDie();
    index.add("general", "marilla").orDie();
    index.add("sales", "gilbert").orDie();

    // Anne moves to sales.
    index.remove("general", "anne").orDie();
    index.add("sales", "anne").orDie();

    String[] divisions = {"general", "sales"};
    for (String division : divisions) {
      System.out.println(division);
      for (String member : index.getValues(division, 0)) {
        System.out.println(" -- " + member);
      }
    }

    IndexIterator iter = index.makeIterator();
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

    index.close().orDie();
  }
}

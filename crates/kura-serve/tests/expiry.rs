//! Expiry on the wire: each command's answers and errors as Redis 7 gives
//! them, MULTI/EXEC with SET EX, expired keys hidden from every read, the
//! sweeper removing them, TTLs kept across a restart, and a database
//! holding records written without expiry refusing the expiry commands.

mod common;

use std::time::{Duration, Instant};

use common::{start, Raw, TIMEOUT};
use kura_serve::Server;

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !done() {
        assert!(Instant::now() < deadline, "waited in vain for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn set_and_its_expiry_options_answer_as_redis() {
    let server = start(&["#dbm=stdhash"]);
    let mut c = Raw::new(&server);
    assert_eq!(c.send("SET a 1 EX 100"), "+OK");
    assert_eq!(c.int("TTL a"), 100);
    assert!((99_000..=100_000).contains(&c.int("PTTL a")));
    assert_eq!(c.send("SET b 2"), "+OK");
    assert_eq!(c.int("TTL b"), -1);
    assert_eq!(c.int("TTL nothing"), -2);
    assert_eq!(c.int("PTTL nothing"), -2);
    // Errors, in Redis's words.
    assert_eq!(c.send("SET a 1 NX XX"), "-ERR syntax error");
    assert_eq!(c.send("SET a 1 EX 10 PX 10"), "-ERR syntax error");
    assert_eq!(c.send("SET a 1 KEEPTTL EX 10"), "-ERR syntax error");
    assert_eq!(c.send("SET a 1 EX"), "-ERR syntax error");
    assert_eq!(c.send("SET a 1 EX 0"), "-ERR invalid expire time in 'set' command");
    assert_eq!(c.send("SET a 1 PX -5"), "-ERR invalid expire time in 'set' command");
    assert_eq!(c.send("SET a 1 EX 9223372036854775807"), "-ERR invalid expire time in 'set' command");
    assert_eq!(c.send("SET a 1 PX 9223372036854775807"), "-ERR invalid expire time in 'set' command");
    assert_eq!(c.send("SET a 1 EX ten"), "-ERR value is not an integer or out of range");
    assert_eq!(c.int("TTL a"), 100, "a refused SET changes nothing");
    // PX, EXAT, PXAT; a time past leaves the key gone.
    assert_eq!(c.send("SET p v PX 50000"), "+OK");
    assert!((49_000..=50_000).contains(&c.int("PTTL p")));
    let at = now_ms() / 1000 + 1000;
    assert_eq!(c.send(&format!("SET e v EXAT {at}")), "+OK");
    assert_eq!(c.int("EXPIRETIME e"), at);
    assert_eq!(c.send(&format!("SET e v PXAT {}", at * 1000 + 7)), "+OK");
    assert_eq!(c.int("PEXPIRETIME e"), at * 1000 + 7);
    assert_eq!(c.send("SET e v PXAT 1"), "+OK");
    assert_eq!(c.int("EXISTS e"), 0);
    // NX, XX, GET with an expiry.
    assert_eq!(c.send("SET n 1 NX EX 100"), "+OK");
    assert_eq!(c.send("SET n 2 NX EX 100"), "$-1");
    assert_eq!(c.send("SET x 1 XX EX 100"), "$-1");
    assert_eq!(c.send("SET n 3 XX GET PX 5000"), "1");
    assert!(c.int("PTTL n") <= 5000);
    assert_eq!(c.send("SET g v GET EX 10"), "$-1");
    // KEEPTTL keeps it; a plain SET, GETSET and MSET replace it.
    assert_eq!(c.send("SET a 2 KEEPTTL"), "+OK");
    assert_eq!(c.int("TTL a"), 100);
    assert_eq!(c.send("SET a 3"), "+OK");
    assert_eq!(c.int("TTL a"), -1);
    assert_eq!(c.send("SET a 4 EX 100"), "+OK");
    assert_eq!(c.send("GETSET a 5"), "4");
    assert_eq!(c.int("TTL a"), -1);
    assert_eq!(c.send("SET a 6 EX 100"), "+OK");
    assert_eq!(c.send("MSET a 7 b 8"), "+OK");
    assert_eq!(c.int("TTL a"), -1);
    // Changes of a value keep it.
    assert_eq!(c.send("SET i 5 EX 100"), "+OK");
    assert_eq!(c.int("INCR i"), 6);
    assert_eq!(c.int("INCRBY i 4"), 10);
    assert_eq!(c.int("APPEND i 0"), 3);
    assert_eq!(c.int("TTL i"), 100);
    assert_eq!(c.send("GET i"), "100");
}

#[test]
fn getex_setex_psetex_and_persist_answer_as_redis() {
    let server = start(&["#dbm=stdtree"]);
    let mut c = Raw::new(&server);
    assert_eq!(c.send("SETEX s 10 v"), "+OK");
    assert_eq!(c.int("TTL s"), 10);
    assert_eq!(c.send("SETEX s 0 v"), "-ERR invalid expire time in 'setex' command");
    assert_eq!(c.send("SETEX s x v"), "-ERR value is not an integer or out of range");
    assert_eq!(c.send("PSETEX p 5000 v"), "+OK");
    assert!((4000..=5000).contains(&c.int("PTTL p")));
    assert_eq!(c.send("PSETEX p -1 v"), "-ERR invalid expire time in 'psetex' command");
    assert_eq!(c.send("SETEX"), "-ERR wrong number of arguments for 'setex' command");
    // GETEX: a plain read, then with each option.
    assert_eq!(c.send("GETEX s"), "v");
    assert_eq!(c.int("TTL s"), 10);
    assert_eq!(c.send("GETEX s EX 50"), "v");
    assert_eq!(c.int("TTL s"), 50);
    assert_eq!(c.send("GETEX s PX 20000"), "v");
    assert_eq!(c.int("TTL s"), 20);
    let at = now_ms() / 1000 + 500;
    assert_eq!(c.send(&format!("GETEX s EXAT {at}")), "v");
    assert_eq!(c.int("EXPIRETIME s"), at);
    assert_eq!(c.send("GETEX s PERSIST"), "v");
    assert_eq!(c.int("TTL s"), -1);
    assert_eq!(c.send("GETEX s PERSIST EX 10"), "-ERR syntax error");
    assert_eq!(c.send("GETEX s NX"), "-ERR syntax error");
    assert_eq!(c.send("GETEX s EX"), "-ERR syntax error");
    assert_eq!(c.send("GETEX s EX 0"), "-ERR invalid expire time in 'getex' command");
    // A missing key answers nil before its time is checked, as in Redis.
    assert_eq!(c.send("GETEX nothing EX 0"), "$-1");
    assert_eq!(c.send("GETEX s PXAT 1"), "v");
    assert_eq!(c.send("GET s"), "$-1");
    // PERSIST.
    assert_eq!(c.send("SET k v EX 100"), "+OK");
    assert_eq!(c.int("PERSIST k"), 1);
    assert_eq!(c.int("PERSIST k"), 0);
    assert_eq!(c.int("PERSIST nothing"), 0);
    assert_eq!(c.int("TTL k"), -1);
    assert_eq!(c.int("EXPIRETIME k"), -1);
    assert_eq!(c.int("PEXPIRETIME nothing"), -2);
}

#[test]
fn expire_and_its_conditions_answer_as_redis() {
    let server = start(&["#dbm=stdhash"]);
    let mut c = Raw::new(&server);
    assert_eq!(c.send("SET k v"), "+OK");
    assert_eq!(
        c.send("EXPIRE k 10 NX XX"),
        "-ERR NX and XX, GT or LT options at the same time are not compatible"
    );
    assert_eq!(
        c.send("EXPIRE k 10 NX GT"),
        "-ERR NX and XX, GT or LT options at the same time are not compatible"
    );
    assert_eq!(c.send("EXPIRE k 10 GT LT"), "-ERR GT and LT options at the same time are not compatible");
    assert_eq!(c.send("EXPIRE k 10 SOON"), "-ERR Unsupported option SOON");
    assert_eq!(c.send("EXPIRE k ten"), "-ERR value is not an integer or out of range");
    assert_eq!(c.send("EXPIRE k 9223372036854775807"), "-ERR invalid expire time in 'expire' command");
    assert_eq!(c.send("PEXPIRE k 9223372036854775807"), "-ERR invalid expire time in 'pexpire' command");
    assert_eq!(c.send("EXPIRE k"), "-ERR wrong number of arguments for 'expire' command");
    // No expiry yet: XX and GT refuse, LT and NX set it.
    assert_eq!(c.int("EXPIRE k 10 XX"), 0);
    assert_eq!(c.int("EXPIRE k 10 GT"), 0);
    assert_eq!(c.int("EXPIRE k 100 LT"), 1);
    assert_eq!(c.int("TTL k"), 100);
    assert_eq!(c.int("EXPIRE k 10 NX"), 0);
    assert_eq!(c.int("EXPIRE k 200 LT"), 0);
    assert_eq!(c.int("EXPIRE k 50 GT"), 0);
    assert_eq!(c.int("EXPIRE k 200 GT"), 1);
    assert_eq!(c.int("TTL k"), 200);
    assert_eq!(c.int("EXPIRE k 20 XX"), 1);
    assert_eq!(c.int("TTL k"), 20);
    assert_eq!(c.int("PEXPIRE k 30000"), 1);
    assert_eq!(c.int("TTL k"), 30);
    let at = now_ms() / 1000 + 1000;
    assert_eq!(c.int(&format!("EXPIREAT k {at}")), 1);
    assert_eq!(c.int("EXPIRETIME k"), at);
    assert_eq!(c.int(&format!("PEXPIREAT k {}", at * 1000 + 1)), 1);
    assert_eq!(c.int("PEXPIRETIME k"), at * 1000 + 1);
    assert_eq!(c.int("EXPIRE nothing 10"), 0);
    // A time past (negative, too) removes the key and answers 1.
    assert_eq!(c.int("EXPIRE k -1"), 1);
    assert_eq!(c.int("EXISTS k"), 0);
    assert_eq!(c.send("SET k v"), "+OK");
    assert_eq!(c.int("PEXPIREAT k 1"), 1);
    assert_eq!(c.send("GET k"), "$-1");
}

#[test]
fn expired_keys_are_hidden_from_every_read_and_swept() {
    let server = Server::builder(["#dbm=stdtree"])
        .address("127.0.0.1:0")
        .threads(2)
        .expiry_sweep_rate(1000)
        .start()
        .unwrap();
    let mut c = Raw::new(&server);
    for i in 0..20 {
        assert_eq!(c.send(&format!("SET short:{i} v PX 100")), "+OK");
    }
    assert_eq!(c.send("SET long v EX 1000"), "+OK");
    assert_eq!(c.send("SET kept v"), "+OK");
    assert_eq!(c.int("DBSIZE"), 22);
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(c.send("GET short:1"), "$-1");
    assert_eq!(c.send("MGET short:1 long"), "[$-1, v]");
    assert_eq!(c.int("EXISTS short:1 short:2 long kept"), 2);
    assert_eq!(c.send("TYPE short:1"), "+none");
    assert_eq!(c.int("STRLEN short:1"), 0);
    assert_eq!(c.send("KEYS *"), "[kept, long]");
    assert_eq!(c.send("RANGE - +"), "[kept, v, long, v]");
    assert_eq!(c.send("SCAN 0 COUNT 100"), "[0, [kept, long]]");
    assert_eq!(c.int("DEL short:3"), 0);
    assert_eq!(c.send("SET short:4 again NX"), "+OK");
    // The sweeper removes the rest; DBSIZE, which counts the stored keys as
    // Redis's does, comes down, and INFO shows its estimates.
    wait_for("the sweeper to remove the expired keys", || c.int("DBSIZE") == 3);
    wait_for("INFO's estimate", || c.send("INFO keyspace").contains("db0:keys=3,expires=1,avg_ttl="));
}

#[test]
fn a_transaction_sets_expiries_atomically_and_watch_sees_them() {
    let server = start(&["#dbm=stdhash"]);
    let (mut c, mut other) = (Raw::new(&server), Raw::new(&server));
    assert_eq!(c.send("MULTI"), "+OK");
    assert_eq!(c.send("SET m 1 EX 10"), "+QUEUED");
    assert_eq!(c.send("TTL m"), "+QUEUED");
    assert_eq!(c.send("GETEX m PX 5000"), "+QUEUED");
    assert_eq!(c.send("SET gone 1 PXAT 1"), "+QUEUED");
    assert_eq!(c.send("EXISTS gone"), "+QUEUED");
    assert_eq!(c.send("EXEC"), "[+OK, :10, 1, +OK, :0]");
    assert!((4000..=5000).contains(&c.int("PTTL m")));
    // A change of a watched key's expiry alone aborts the block.
    assert_eq!(c.send("WATCH m"), "+OK");
    assert_eq!(other.int("EXPIRE m 100"), 1);
    assert_eq!(c.send("MULTI"), "+OK");
    assert_eq!(c.send("SET m 2"), "+QUEUED");
    assert_eq!(c.send("EXEC"), "*-1");
    assert_eq!(c.send("GET m"), "1");
    assert_eq!(c.int("TTL m"), 100);
    assert_eq!(c.send("MULTI"), "+OK");
    assert_eq!(c.send("DBSIZE"), "+QUEUED");
    assert_eq!(c.send("KEYS *"), "+QUEUED");
    assert_eq!(c.send("EXEC"), "[:1, [m]]");
}

#[test]
fn expiry_times_survive_a_restart_and_old_databases_refuse_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.tkh").display().to_string();
    {
        let server = start(&[&path]);
        let mut c = Raw::new(&server);
        assert_eq!(c.send("SET a v EX 1000"), "+OK");
        assert_eq!(c.send("SET b v"), "+OK");
        server.stop().unwrap();
    }
    let server = start(&[&path]);
    let mut c = Raw::new(&server);
    assert!((999..=1000).contains(&c.int("TTL a")));
    assert_eq!(c.int("TTL b"), -1);
    assert_eq!(c.int("DBSIZE"), 2);
    server.stop().unwrap();
    // A database written without expiry keeps serving, without it.
    let old = dir.path().join("old.tkh");
    kuradb::dbm::poly::PolyDbm::open(&old, kuradb::dbm::Access::ReadWrite, &Default::default())
        .and_then(|db| kuradb::dbm::Dbm::set(&db, b"k", b"v").and_then(|()| db.close()))
        .unwrap();
    let old = old.display().to_string();
    let refused = dir.path().join("refused.tkh#expiry=false").display().to_string();
    let server = start(&[&old, &refused]);
    let mut c = Raw::new(&server);
    assert_eq!(c.send("GET k"), "v");
    let why =
        "-ERR expiry is off for this database: it holds records written without expiry (see docs/serve.md)";
    assert_eq!(c.send("SET k v EX 10"), why);
    assert_eq!(c.send("TTL k"), why);
    assert_eq!(c.send("EXPIRE k 10"), why);
    assert_eq!(c.send("SET k w KEEPTTL"), "+OK");
    assert_eq!(c.send("SELECT 1"), "+OK");
    assert_eq!(
        c.send("SETEX k 10 v"),
        "-ERR expiry is off for this database: its spec says expiry=false (see docs/serve.md)"
    );
    assert_eq!(c.send("SET k v"), "+OK");
    assert_eq!(c.send("GET k"), "v");
}

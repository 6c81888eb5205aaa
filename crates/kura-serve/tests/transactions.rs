//! MULTI/EXEC/DISCARD/WATCH/UNWATCH on the wire: the exact answers (raw
//! RESP), and isolation against a concurrent client.

mod common;

use common::{start, Raw};

#[test]
fn exec_answers_each_reply_and_runtime_errors_in_place() {
    let server = start(&["#dbm=baby"]);
    let mut c = Raw::new(&server);
    assert_eq!(c.call(&["SET", "text", "abc"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["SET", "a", "1"]), "+QUEUED");
    assert_eq!(c.call(&["INCR", "text"]), "+QUEUED");
    assert_eq!(c.call(&["INCR", "a"]), "+QUEUED");
    assert_eq!(c.call(&["GET", "a"]), "+QUEUED");
    assert_eq!(
        c.call(&["EXEC"]),
        "[+OK, -ERR value is not an integer or out of range, :2, 2]",
        "the error is reported in place and the others apply"
    );
    assert_eq!(c.call(&["GET", "a"]), "2");
    // An empty block.
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["EXEC"]), "[]");
    server.stop().unwrap();
}

#[test]
fn queue_time_errors_abort_and_misplaced_commands_are_refused() {
    let server = start(&["#dbm=baby", "#dbm=baby"]);
    let mut c = Raw::new(&server);
    assert_eq!(c.call(&["EXEC"]), "-ERR EXEC without MULTI");
    assert_eq!(c.call(&["DISCARD"]), "-ERR DISCARD without MULTI");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "-ERR MULTI calls can not be nested");
    assert_eq!(c.call(&["WATCH", "x"]), "-ERR WATCH inside MULTI is not allowed");
    assert_eq!(c.call(&["SET", "a", "1"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "[+OK]", "as in Redis, a nested MULTI or a WATCH does not abort");
    for bad in [&["NOSUCH", "x"][..], &["GET"], &["SCAN", "0"]] {
        assert_eq!(c.call(&["MULTI"]), "+OK");
        assert_eq!(c.call(&["SET", "b", "1"]), "+QUEUED");
        assert!(c.call(bad).starts_with("-ERR"), "{bad:?}");
        assert_eq!(c.call(&["EXEC"]), "-EXECABORT Transaction discarded because of previous errors.");
        assert_eq!(c.call(&["GET", "b"]), "$-1", "nothing of an aborted block applies");
    }
    // DISCARD drops the block.
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["SET", "c", "1"]), "+QUEUED");
    assert_eq!(c.call(&["DISCARD"]), "+OK");
    assert_eq!(c.call(&["GET", "c"]), "$-1");
    // SELECT inside a block: it runs, and stays selected after.
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["SELECT", "1"]), "+QUEUED");
    assert_eq!(c.call(&["SET", "d", "1"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "[+OK, +OK]");
    assert_eq!(c.call(&["GET", "d"]), "1");
    assert_eq!(c.call(&["SELECT", "0"]), "+OK");
    assert_eq!(c.call(&["GET", "d"]), "$-1");
    // Data commands on two databases in one block are refused.
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["SET", "e", "1"]), "+QUEUED");
    assert_eq!(c.call(&["SELECT", "1"]), "+QUEUED");
    assert!(c.call(&["SET", "e", "1"]).starts_with("-ERR kura serve runs a MULTI block on one database"));
    assert!(c.call(&["EXEC"]).starts_with("-EXECABORT"));
    server.stop().unwrap();
}

#[test]
fn a_changed_watched_key_makes_exec_answer_nil() {
    let server = start(&["#dbm=baby"]);
    let (mut c, mut other) = (Raw::new(&server), Raw::new(&server));
    assert_eq!(c.call(&["WATCH", "w"]), "+OK");
    assert_eq!(other.call(&["SET", "w", "1"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["SET", "out", "1"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "*-1");
    assert_eq!(c.call(&["GET", "out"]), "$-1");
    // EXEC unwatched: the next block runs.
    assert_eq!(other.call(&["SET", "w", "2"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["SET", "out", "2"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "[+OK]");
    // A change by the same client after WATCH aborts too.
    assert_eq!(c.call(&["WATCH", "w"]), "+OK");
    assert_eq!(c.call(&["SET", "w", "3"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["SET", "out", "3"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "*-1");
    // Unchanged, or UNWATCHed: it runs.
    assert_eq!(c.call(&["WATCH", "w"]), "+OK");
    assert_eq!(other.call(&["SET", "unwatched", "1"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["GET", "w"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "[3]");
    assert_eq!(c.call(&["WATCH", "w"]), "+OK");
    assert_eq!(other.call(&["SET", "w", "4"]), "+OK");
    assert_eq!(c.call(&["UNWATCH"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["EXEC"]), "[]");
    // RESP3's nil.
    assert!(c.call(&["HELLO", "3"]).starts_with('%'));
    drain_map(&mut c);
    assert_eq!(c.call(&["WATCH", "w"]), "+OK");
    assert_eq!(other.call(&["DEL", "w"]), ":1");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["EXEC"]), "_");
    server.stop().unwrap();
}

/// Reads the rest of HELLO's map (7 pairs) after its header line.
fn drain_map(c: &mut Raw) {
    for _ in 0..14 {
        let line = c.line();
        if line.starts_with('$') {
            c.line();
        } else if line.starts_with('*') {
            // modules: an empty array
        }
    }
}

#[test]
fn a_concurrent_client_never_sees_half_an_exec() {
    for spec in ["#dbm=baby", "#dbm=tiny"] {
        let server = start(&[spec]);
        let mut c = Raw::new(&server);
        assert_eq!(c.call(&["MSET", "a", "0", "b", "0"]), "+OK");
        let address = server.address().to_string();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut con =
                    redis::Client::open(format!("redis://{address}/")).unwrap().get_connection().unwrap();
                let mut reads = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let (a, b): (i64, i64) = redis::cmd("MGET").arg("a").arg("b").query(&mut con).unwrap();
                    assert_eq!(a, b, "a reader saw a half-applied EXEC");
                    let a: i64 = redis::cmd("GET").arg("a").query(&mut con).unwrap();
                    let b: i64 = redis::cmd("GET").arg("b").query(&mut con).unwrap();
                    assert!(b >= a, "b is written after a in each block, and read after it");
                    reads += 1;
                }
                reads
            })
        };
        // Two writers: each block increments both, so they stay equal.
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let address = server.address().to_string();
                std::thread::spawn(move || {
                    let mut con =
                        redis::Client::open(format!("redis://{address}/")).unwrap().get_connection().unwrap();
                    for _ in 0..200 {
                        let (): () = redis::pipe()
                            .atomic()
                            .incr("a", 1)
                            .ignore()
                            .incr("b", 1)
                            .ignore()
                            .query(&mut con)
                            .unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
        assert_eq!(c.call(&["MGET", "a", "b"]), "[400, 400]", "no increment was lost ({spec})");
        server.stop().unwrap();
    }
}

#[test]
fn whole_database_commands_run_on_the_block_view() {
    let server = start(&["#dbm=baby"]);
    let (mut c, mut other) = (Raw::new(&server), Raw::new(&server));
    assert_eq!(c.call(&["MSET", "a", "1", "b", "2", "c", "3"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["DEL", "b"]), "+QUEUED");
    assert_eq!(c.call(&["SET", "d", "4"]), "+QUEUED");
    assert_eq!(c.call(&["KEYS", "*"]), "+QUEUED");
    assert_eq!(c.call(&["RANGE", "[b", "+"]), "+QUEUED");
    assert_eq!(c.call(&["RANGE", "-", "(d", "REV", "NOVALUES"]), "+QUEUED");
    assert_eq!(c.call(&["DBSIZE"]), "+QUEUED");
    assert_eq!(c.call(&["FLUSHDB"]), "+QUEUED");
    assert_eq!(c.call(&["DBSIZE"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "[:1, +OK, [a, c, d], [c, 3, d, 4], [c, a], :3, +OK, :0]");
    assert_eq!(c.call(&["DBSIZE"]), ":0");
    // FLUSHDB while another client watches is refused, with the reason.
    assert_eq!(c.call(&["SET", "k", "v"]), "+OK");
    assert_eq!(other.call(&["WATCH", "k"]), "+OK");
    let refused = c.call(&["FLUSHDB"]);
    assert!(refused.starts_with("-ERR") && refused.contains("snapshot or transaction is open"), "{refused}");
    assert_eq!(other.call(&["UNWATCH"]), "+OK");
    assert_eq!(c.call(&["FLUSHDB"]), "+OK");
    server.stop().unwrap();
}

//! Replication between `kura serve` processes: a replica follows every
//! kind of write on hash and tree databases, resumes after restarts of
//! either side, refuses client writes until promoted, and resyncs fully
//! when the master's log has lost the entries it needs.

mod serve_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serve_support::{error_text, Server, TIMEOUT};

type Contents = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every record of database `db`, by KEYS and GET.
fn contents(server: &Server, db: usize) -> Contents {
    let mut con = server.client();
    let _: () = redis::cmd("SELECT").arg(db).query(&mut con).unwrap();
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    keys.into_iter()
        .map(|k| {
            let v: Vec<u8> = redis::cmd("GET").arg(&k).query(&mut con).unwrap();
            (k, v)
        })
        .collect()
}

/// The `field:value` lines of INFO replication.
fn info(server: &Server) -> BTreeMap<String, String> {
    let text: String = redis::cmd("INFO").arg("replication").query(&mut server.client()).unwrap();
    text.lines().filter_map(|l| l.split_once(':')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// Waits until `replica`'s database `db` holds what `master`'s does.
fn wait_equal(master: &Server, replica: &Server, db: usize) -> Contents {
    let want = contents(master, db);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let got = contents(replica, db);
        if got == want {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "database {db} of the replica never caught up: {} of {} keys",
            got.len(),
            want.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !done() {
        assert!(Instant::now() < deadline, "waited in vain for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn spec(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

fn start_master(dir: &Path, specs: &[String], extra: &[&str]) -> Server {
    let ulog = spec(dir, "ulog");
    let mut args: Vec<&str> = specs.iter().map(String::as_str).collect();
    args.extend(["--ulog", &ulog]);
    args.extend(extra);
    Server::start(&args)
}

fn start_replica(specs: &[String], master: &Server) -> Server {
    let mut args: Vec<&str> = specs.iter().map(String::as_str).collect();
    args.extend(["--replicaof", &master.address]);
    Server::start(&args)
}

fn query(server: &Server, db: usize, commands: &[&[&str]]) {
    let mut con = server.client();
    let _: () = redis::cmd("SELECT").arg(db).query(&mut con).unwrap();
    for words in commands {
        let mut cmd = redis::cmd(words[0]);
        for w in &words[1..] {
            cmd.arg(*w);
        }
        let _: redis::Value = cmd.query(&mut con).unwrap();
    }
}

#[test]
fn a_replica_follows_every_kind_of_write_on_hash_and_tree_databases() {
    let dir = tempfile::tempdir().unwrap();
    let master = start_master(dir.path(), &[spec(dir.path(), "m.tkh"), spec(dir.path(), "m.tkt")], &[]);
    query(&master, 0, &[&["SET", "before", "the replica"]]);
    let replica = start_replica(&[spec(dir.path(), "r.tkh"), spec(dir.path(), "r.tkt")], &master);
    for db in 0..2 {
        query(
            &master,
            db,
            &[
                &["SET", "a", "1"],
                &["MSET", "b", "2", "c", "3", "d", "4"],
                &["INCR", "a"],
                &["APPEND", "b", "x"],
                &["DEL", "c", "nothing"],
                &["FLUSHDB"],
                &["SET", "after", "the clear"],
                &["SET", "k1", "v1"],
                &["GETSET", "k1", "v2"],
                &["SETNX", "k2", "v"],
            ],
        );
        let got = wait_equal(&master, &replica, db);
        let want: Contents = [("after", "the clear"), ("k1", "v2"), ("k2", "v")]
            .into_iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect();
        assert_eq!(got, want, "database {db}");
    }
    wait_for("the replica's lag to reach 0", || {
        let i = info(&replica);
        i["master_link_status"] == "up" && i["slave_lag_ms"] == "0"
    });
    let i = info(&replica);
    assert_eq!(i["role"], "slave");
    assert_eq!(i["master_port"], master.port().to_string());
    assert!(i["db0_link"].contains("last_sync=full"), "a new replica starts with a snapshot: {i:?}");
    let m = info(&master);
    // One replica, though it follows two databases.
    assert_eq!((m["role"].as_str(), m["connected_slaves"].as_str()), ("master", "1"), "{m:?}");
}

#[test]
fn role_info_and_wait_speak_as_redis_does_for_sentinel() {
    let dir = tempfile::tempdir().unwrap();
    let master = start_master(dir.path(), &[spec(dir.path(), "m.tkh")], &[]);
    let replica = start_replica(&[spec(dir.path(), "r.tkh")], &master);
    let mut con = master.client();
    // Writes acknowledged by the replica: WAIT answers 1 well before its timeout.
    for i in 0..20 {
        let _: () = redis::cmd("SET").arg(format!("k{i}")).arg(i).query(&mut con).unwrap();
        let began = Instant::now();
        let acked: i64 = redis::cmd("WAIT").arg(1).arg(10_000).query(&mut con).unwrap();
        assert_eq!(acked, 1, "write {i}");
        assert!(began.elapsed() < Duration::from_secs(2), "WAIT took {:?}", began.elapsed());
        let got: Option<String> =
            redis::cmd("GET").arg(format!("k{i}")).query(&mut replica.client()).unwrap();
        assert_eq!(got, Some(i.to_string()), "what WAIT counted is on the replica");
    }
    // Two replicas are not there: WAIT gives up after its timeout.
    let began = Instant::now();
    let acked: i64 = redis::cmd("WAIT").arg(2).arg(200).query(&mut con).unwrap();
    assert_eq!(acked, 1);
    assert!(began.elapsed() >= Duration::from_millis(200));

    let m = info(&master);
    let r = info(&replica);
    let slave0 = &m["slave0"];
    assert!(
        slave0.starts_with(&format!("ip=127.0.0.1,port={},state=online,offset=", replica.port())),
        "{m:?}"
    );
    assert!(slave0.contains(",lag="), "{slave0}");
    let master_offset: u64 = m["master_repl_offset"].parse().unwrap();
    let replica_offset: u64 = r["slave_repl_offset"].parse().unwrap();
    assert!(replica_offset > 0 && replica_offset <= master_offset + 1000, "{replica_offset} {master_offset}");
    assert_eq!(r["master_host"], "127.0.0.1");
    assert_eq!(r["master_link_status"], "up");
    assert_eq!((r["slave_priority"].as_str(), r["slave_read_only"].as_str()), ("100", "1"));
    assert!(!r.contains_key("master_link_down_since_seconds"), "the link is up: {r:?}");
    let run_id: String = redis::cmd("INFO").arg("server").query(&mut con).unwrap();
    let run_id = run_id.lines().find_map(|l| l.strip_prefix("run_id:")).unwrap().to_string();
    assert!(run_id.len() == 40 && run_id.chars().all(|c| c.is_ascii_hexdigit()), "{run_id}");

    let role: redis::Value = redis::cmd("ROLE").query(&mut con).unwrap();
    let redis::Value::Array(items) = role else { panic!("{role:?}") };
    assert_eq!(items[0], redis::Value::BulkString(b"master".to_vec()));
    let redis::Value::Array(replicas) = &items[2] else { panic!("{items:?}") };
    let redis::Value::Array(first) = &replicas[0] else { panic!("{replicas:?}") };
    assert_eq!(first[1], redis::Value::BulkString(replica.port().to_string().into_bytes()));
    let role: redis::Value = redis::cmd("ROLE").query(&mut replica.client()).unwrap();
    let redis::Value::Array(items) = role else { panic!("{role:?}") };
    assert_eq!(items[0], redis::Value::BulkString(b"slave".to_vec()));
    assert_eq!(items[2], redis::Value::Int(i64::from(master.port())));
    assert_eq!(items[3], redis::Value::BulkString(b"connected".to_vec()));
    let err = redis::cmd("WAIT").arg(1).arg(10).query::<i64>(&mut replica.client()).unwrap_err();
    assert!(error_text(&err).starts_with("ERR WAIT cannot be used with replica instances"), "{err}");

    // The master gone, the replica says since when its link is down.
    drop(master);
    wait_for("the link to go down", || info(&replica)["master_link_status"] == "down");
    assert!(info(&replica).contains_key("master_link_down_since_seconds"));
}

#[test]
fn a_replica_refuses_writes_until_replicaof_no_one_promotes_it() {
    let dir = tempfile::tempdir().unwrap();
    let master = start_master(dir.path(), &[spec(dir.path(), "m.tkh")], &[]);
    query(&master, 0, &[&["SET", "k", "from the master"]]);
    let replica_db = spec(dir.path(), "r.tkh");
    let replica = start_replica(std::slice::from_ref(&replica_db), &master);
    wait_equal(&master, &replica, 0);
    let mut con = replica.client();
    for cmd in [
        redis::cmd("SET").arg("k").arg("v").clone(),
        redis::cmd("FLUSHDB").clone(),
        redis::cmd("DEL").arg("k").clone(),
    ] {
        let err = cmd.query::<redis::Value>(&mut con).unwrap_err();
        assert_eq!(error_text(&err), "READONLY You can't write against a read only replica.");
    }
    let got: String = redis::cmd("GET").arg("k").query(&mut con).unwrap();
    assert_eq!(got, "from the master");
    assert!(
        Path::new(&format!("{replica_db}.replica")).exists(),
        "the position is saved beside the database"
    );
    let _: () = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query(&mut con).unwrap();
    let _: () = redis::cmd("SET").arg("k").arg("mine now").query(&mut con).unwrap();
    assert_eq!(info(&replica)["role"], "master");
    assert!(!Path::new(&format!("{replica_db}.replica")).exists(), "a promoted replica forgets its position");
    // The old master's writes no longer arrive.
    query(&master, 0, &[&["SET", "k", "late"]]);
    std::thread::sleep(Duration::from_millis(300));
    let got: String = redis::cmd("GET").arg("k").query(&mut con).unwrap();
    assert_eq!(got, "mine now");
    // A server without --ulog has no log to feed.
    let err = redis::cmd("REPLSYNC").arg(0).arg("FULL").query::<redis::Value>(&mut con).unwrap_err();
    assert!(error_text(&err).contains("--ulog"), "{err}");
}

#[test]
fn a_replica_restarted_mid_stream_resumes_where_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let master = start_master(dir.path(), &[spec(dir.path(), "m.tkt")], &[]);
    let replica_db = vec![spec(dir.path(), "r.tkt")];
    let replica = start_replica(&replica_db, &master);
    wait_for("the first link", || info(&replica)["master_link_status"] == "up");
    let writer = {
        let mut con = master.client();
        std::thread::spawn(move || {
            // Many entries share each millisecond: resuming inside one must
            // skip exactly the applied ones.
            for i in 0..3000 {
                let _: () = redis::cmd("SET").arg(format!("key{i:05}")).arg(i).query(&mut con).unwrap();
                if i % 7 == 0 {
                    let _: () = redis::cmd("DEL").arg(format!("key{:05}", i / 2)).query(&mut con).unwrap();
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    drop(replica); // killed mid-stream, without a chance to save
    let replica = start_replica(&replica_db, &master);
    writer.join().unwrap();
    let got = wait_equal(&master, &replica, 0);
    assert!(got.len() > 2000, "{}", got.len());
    let i = info(&replica);
    assert!(i["db0_link"].contains("last_sync=continue"), "resumed, not resynced: {i:?}");
}

#[test]
fn a_replica_reconnects_when_its_master_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let master_db = vec![spec(dir.path(), "m.tkh")];
    let master = start_master(dir.path(), &master_db, &[]);
    let port = master.port();
    let replica = start_replica(&[spec(dir.path(), "r.tkh")], &master);
    query(&master, 0, &[&["SET", "one", "1"], &["SET", "two", "2"]]);
    wait_equal(&master, &replica, 0);
    master.terminate();
    master.wait(TIMEOUT);
    wait_for("the link to go down", || info(&replica)["master_link_status"] == "down");
    let ulog = spec(dir.path(), "ulog");
    let master = Server::start_at(&format!("127.0.0.1:{port}"), &[&master_db[0], "--ulog", &ulog]);
    query(&master, 0, &[&["DEL", "one"], &["SET", "three", "3"]]);
    let got = wait_equal(&master, &replica, 0);
    assert_eq!(got.keys().cloned().collect::<Vec<_>>(), vec![b"three".to_vec(), b"two".to_vec()]);
    let i = info(&replica);
    assert!(i["db0_link"].contains("last_sync=continue"), "{i:?}");
}

#[test]
fn a_replica_resyncs_fully_when_the_master_log_lost_its_entries() {
    let dir = tempfile::tempdir().unwrap();
    let master = start_master(dir.path(), &[spec(dir.path(), "m.tkh")], &["--ulog_max_file_size", "2000"]);
    let replica_db = vec![spec(dir.path(), "r.tkh")];
    let replica = start_replica(&replica_db, &master);
    query(&master, 0, &[&["SET", "early", "1"], &["SET", "doomed", "x"]]);
    wait_equal(&master, &replica, 0);
    replica.terminate();
    replica.wait(TIMEOUT);
    // Written while the replica is away, into files then removed.
    let mut con = master.client();
    let _: () = redis::cmd("DEL").arg("doomed").query(&mut con).unwrap();
    for i in 0..200 {
        let _: () = redis::cmd("SET").arg(format!("k{i}")).arg("v".repeat(50)).query(&mut con).unwrap();
    }
    let _: () = redis::cmd("SAVE").query(&mut con).unwrap();
    let prefix = spec(dir.path(), "ulog/db0");
    let removed = std::process::Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["ulog", "removeoldfiles", "--timestamp", "+1d", "--exclude_latest", &prefix])
        .output()
        .unwrap();
    assert!(removed.status.success(), "{removed:?}");
    let _: () = redis::cmd("SET").arg("last").arg("1").query(&mut con).unwrap();
    let replica = start_replica(&replica_db, &master);
    let got = wait_equal(&master, &replica, 0);
    assert!(!got.contains_key(&b"doomed"[..]) && got.len() == 202, "{}", got.len());
    let i = info(&replica);
    assert!(i["db0_link"].contains("last_sync=full"), "{i:?}");
    assert_eq!(info(&master)["full_resyncs_served"], "2");
}

#[test]
fn an_exec_reaches_the_replica_whole_and_a_block_on_a_replica_only_reads() {
    let dir = tempfile::tempdir().unwrap();
    let master = start_master(dir.path(), &[spec(dir.path(), "m.tkt")], &[]);
    let replica = start_replica(&[spec(dir.path(), "r.tkt")], &master);
    let mut con = master.client();
    let (): () = redis::pipe()
        .atomic()
        .set("a", "1")
        .ignore()
        .set("a", "2")
        .ignore()
        .set("b", "x")
        .ignore()
        .del("nothing")
        .ignore()
        .query(&mut con)
        .unwrap();
    let got = wait_equal(&master, &replica, 0);
    let want: Contents = [("a", "2"), ("b", "x")]
        .into_iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
    assert_eq!(got, want);
    let mut con = replica.client();
    let read: (String,) = redis::pipe().atomic().get("a").query(&mut con).unwrap();
    assert_eq!(read.0, "2", "a block of reads runs on a replica");
    let err = redis::pipe().atomic().set("a", "3").query::<redis::Value>(&mut con).unwrap_err();
    let text = format!("{err:?}");
    assert!(text.contains("read only replica") || text.contains("EXECABORT"), "{text}");
    assert_eq!(redis::cmd("GET").arg("a").query::<String>(&mut con).unwrap(), "2");
}

#[test]
fn a_reader_on_the_replica_never_sees_a_part_of_an_exec() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["m.tkt", "m.tkh"] {
        let master = start_master(dir.path(), &[spec(dir.path(), name)], &[]);
        let replica = start_replica(&[spec(dir.path(), &format!("r-{name}"))], &master);
        let keys: Vec<String> = (0..6).map(|i| format!("part{i}")).collect();
        let mut con = master.client();
        let mut mset = redis::cmd("MSET");
        for key in &keys {
            mset.arg(key).arg(0);
        }
        let _: () = mset.query(&mut con).unwrap();
        wait_equal(&master, &replica, 0);
        const ROUNDS: u64 = 300;
        let writer = std::thread::spawn(move || {
            // Each EXEC moves every key to the next round: the replica must
            // never show two rounds at once.
            for round in 1..=ROUNDS {
                let mut block = redis::pipe();
                block.atomic();
                for i in 0..6 {
                    block.set(format!("part{i}"), round).ignore();
                }
                let (): () = block.query(&mut con).unwrap();
            }
        });
        let mut reader = replica.client();
        let mut reads = 0u64;
        let mut rounds_seen = std::collections::BTreeSet::new();
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let values: Vec<u64> = redis::cmd("MGET").arg(&keys).query(&mut reader).unwrap();
            assert!(
                values.windows(2).all(|w| w[0] == w[1]),
                "{name}: a part of an EXEC on the replica: {values:?}"
            );
            reads += 1;
            rounds_seen.insert(values[0]);
            if values[0] == ROUNDS {
                break;
            }
            assert!(Instant::now() < deadline, "{name}: the replica never reached the last round");
        }
        writer.join().unwrap();
        assert!(rounds_seen.len() > 2, "{name}: the reader ran while EXECs arrived ({reads} reads)");
        // The log holds each EXEC as one unit entry.
        let prefix = spec(dir.path(), "ulog/db0");
        let read = std::process::Command::new(env!("CARGO_BIN_EXE_kura"))
            .args(["ulog", "read", "--items", "1000000", &prefix])
            .output()
            .unwrap();
        assert!(read.status.success(), "{read:?}");
        let text = String::from_utf8_lossy(&read.stdout);
        let units = text.lines().filter(|l| l.split('\t').nth(3) == Some("UNIT")).count();
        assert!(units as u64 >= ROUNDS, "{name}: {units} unit entries");
        drop(replica);
        drop(master);
        std::fs::remove_dir_all(dir.path().join("ulog")).unwrap();
    }
}

#[test]
fn config_rewrite_keeps_replicaof_in_the_config_file_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let master = start_master(dir.path(), &[spec(dir.path(), "m.tkh")], &[]);
    query(&master, 0, &[&["SET", "k", "v"]]);
    let config = spec(dir.path(), "kura.conf");
    let replica_db = spec(dir.path(), "r.tkh");
    let start = || Server::start(&[&replica_db, "--config_file", &config]);
    let replica = start();
    assert_eq!(info(&replica)["role"], "master", "no file yet: a master");
    let mut con = replica.client();
    let _: () = redis::cmd("REPLICAOF").arg("127.0.0.1").arg(master.port()).query(&mut con).unwrap();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("replica-priority").arg(5).query(&mut con).unwrap();
    let _: () = redis::cmd("CONFIG").arg("REWRITE").query(&mut con).unwrap();
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains(&format!("\nreplicaof 127.0.0.1 {}\n", master.port())), "{text}");
    assert!(text.contains("\nreplica-priority 5\n"), "{text}");
    drop(con);
    drop(replica);

    let replica = start();
    wait_equal(&master, &replica, 0);
    let i = info(&replica);
    assert_eq!((i["role"].as_str(), i["slave_priority"].as_str()), ("slave", "5"), "{i:?}");
    let mut con = replica.client();
    let _: () = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query(&mut con).unwrap();
    let _: () = redis::cmd("CONFIG").arg("REWRITE").query(&mut con).unwrap();
    drop(con);
    drop(replica);
    let replica = start();
    assert_eq!(info(&replica)["role"], "master", "promoted, and kept so by the file");
    drop(replica);

    std::fs::write(&config, "maxmemory 1gb\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["serve", &replica_db, "--config_file", &config, "--address", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 1") && err.contains("maxmemory"), "{err}");
}

#[test]
fn expiring_keys_replicate_and_the_master_sweep_reaches_the_replica() {
    let dir = tempfile::tempdir().unwrap();
    let master = start_master(dir.path(), &[spec(dir.path(), "m.tkh")], &["--expiry_sweep_rate", "1000"]);
    query(&master, 0, &[&["SET", "long", "v", "EX", "1000"], &["SET", "plain", "v"]]);
    let replica = start_replica(&[spec(dir.path(), "r.tkh")], &master);
    let mut m = master.client();
    let mut r = replica.client();
    query(&master, 0, &[&["EXPIRE", "plain", "500", "GT"]]);
    wait_equal(&master, &replica, 0);
    // The replica answers the master's expiry times.
    let ttl =
        |con: &mut redis::Connection, key: &str| -> i64 { redis::cmd("TTL").arg(key).query(con).unwrap() };
    // The seconds left, rounded as Redis rounds them: below 1000 once half
    // a second has passed since the SET (a slow start of the replica).
    let long = ttl(&mut r, "long");
    assert!((990..=1000).contains(&long), "the replica's TTL of long is {long}, not the master's");
    assert_eq!(ttl(&mut r, "plain"), -1, "GT on a key without expiry sets none");
    query(&master, 0, &[&["SET", "short", "v", "PX", "1500"]]);
    wait_for("the short-lived key on the replica", || {
        let pttl: i64 = redis::cmd("PTTL").arg("short").query(&mut r).unwrap();
        pttl != -2 && (0..=1500).contains(&pttl)
    });
    // Once expired, the replica hides the key at once; the master's sweep
    // then removes it on both.
    wait_for("the key to expire on the replica", || {
        redis::cmd("EXISTS").arg("short").query::<i64>(&mut r).unwrap() == 0
    });
    wait_for("the master's sweep to reach the replica", || {
        redis::cmd("DBSIZE").query::<i64>(&mut r).unwrap() == 2
    });
    assert_eq!(redis::cmd("DBSIZE").query::<i64>(&mut m).unwrap(), 2);
    // A replica refuses expiry writes as it refuses every write.
    let err = redis::cmd("EXPIRE").arg("long").arg("10").query::<i64>(&mut r).unwrap_err();
    assert!(error_text(&err).contains("READONLY"), "{err}");
    // A committed block with an expiry reaches it whole.
    let _: redis::Value =
        redis::pipe().atomic().cmd("SET").arg("tx").arg("v").arg("EX").arg("100").query(&mut m).unwrap();
    wait_for("the block's key on the replica", || ttl(&mut r, "tx") == 100);
    // The replica counts its expiring keys for INFO, removing nothing.
    wait_for("the replica's INFO estimate", || {
        let text: String = redis::cmd("INFO").arg("keyspace").query(&mut r).unwrap();
        text.contains("db0:keys=3,expires=2,avg_ttl=")
    });
}

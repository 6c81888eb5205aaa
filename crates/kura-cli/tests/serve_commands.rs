//! `kura serve`'s commands through a real Redis client (the `redis` crate),
//! against a model, on a hash database and a tree database, and the error
//! texts clients match on.

mod serve_support;

use std::collections::{BTreeMap, HashSet};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redis::Value;
use serve_support::{error_text, exchange, Server};

fn bulk(v: &[u8]) -> Value {
    Value::BulkString(v.to_vec())
}

fn opt(v: Option<&Vec<u8>>) -> Value {
    v.map_or(Value::Nil, |v| bulk(v))
}

fn run(con: &mut redis::Connection, args: &[&[u8]]) -> Value {
    let mut cmd = redis::cmd(std::str::from_utf8(args[0]).unwrap());
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query::<Value>(con) {
        Ok(v) => v,
        Err(e) => Value::SimpleString(format!("error: {}", error_text(&e))),
    }
}

fn int_text(v: Option<&Vec<u8>>) -> Option<i64> {
    let s = std::str::from_utf8(v?).ok()?;
    s.parse::<i64>().ok().filter(|n| n.to_string() == s)
}

/// Random commands, each checked against what a map would answer.
fn model_run(spec: &str, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = format!("{}/{spec}", dir.path().display());
    let server = Server::start(&[&path]);
    let mut con = server.client();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    let not_int = "error: ERR value is not an integer or out of range".to_string();
    for step in 0..1500 {
        let key = format!("k{}", rng.gen_range(0..40)).into_bytes();
        let key2 = format!("k{}", rng.gen_range(0..40)).into_bytes();
        let value = if rng.gen_bool(0.3) {
            rng.gen_range(-100i64..100).to_string().into_bytes()
        } else {
            format!("v{}", rng.gen_range(0..1000)).into_bytes()
        };
        let (got, want) = match rng.gen_range(0..17) {
            0 => (run(&mut con, &[b"GET", &key]), opt(model.get(&key))),
            1 => {
                let (nx, xx, get) = (rng.gen_bool(0.3), rng.gen_bool(0.3), rng.gen_bool(0.3));
                let mut args: Vec<&[u8]> = vec![b"SET", &key, &value];
                if nx {
                    args.push(b"NX");
                }
                if xx {
                    args.push(b"xx");
                }
                if get {
                    args.push(b"GET");
                }
                let got = run(&mut con, &args);
                if nx && xx {
                    (got, Value::SimpleString("error: ERR syntax error".into()))
                } else {
                    let old = model.get(&key).cloned();
                    let store = !(nx && old.is_some() || xx && old.is_none());
                    if store {
                        model.insert(key.clone(), value.clone());
                    }
                    let want = if get {
                        opt(old.as_ref())
                    } else if store {
                        Value::Okay
                    } else {
                        Value::Nil
                    };
                    (got, want)
                }
            }
            2 => {
                let want = opt(model.get(&key));
                model.insert(key.clone(), value.clone());
                (run(&mut con, &[b"GETSET", &key, &value]), want)
            }
            3 => {
                let fresh = !model.contains_key(&key);
                if fresh {
                    model.insert(key.clone(), value.clone());
                }
                (run(&mut con, &[b"SETNX", &key, &value]), Value::Int(i64::from(fresh)))
            }
            4 => {
                let want =
                    Value::Array(vec![opt(model.get(&key)), opt(model.get(&key2)), opt(model.get(&key))]);
                (run(&mut con, &[b"MGET", &key, &key2, &key]), want)
            }
            5 => {
                model.insert(key.clone(), value.clone());
                model.insert(key2.clone(), b"second".to_vec());
                (run(&mut con, &[b"MSET", &key, &value, &key2, b"second"]), Value::Okay)
            }
            6 => {
                let n = i64::from(model.remove(&key).is_some()) + i64::from(model.remove(&key2).is_some());
                (run(&mut con, &[b"DEL", &key, &key2]), Value::Int(n))
            }
            7 => {
                let n = 2 * i64::from(model.contains_key(&key)) + i64::from(model.contains_key(&key2));
                (run(&mut con, &[b"EXISTS", &key, &key, &key2]), Value::Int(n))
            }
            8..=11 => {
                let (name, delta): (&[u8], i64) = match step % 4 {
                    0 => (b"INCR", 1),
                    1 => (b"DECR", -1),
                    2 => (b"INCRBY", 7),
                    _ => (b"DECRBY", -5),
                };
                let got = if name.len() == 4 {
                    run(&mut con, &[name, &key])
                } else {
                    run(&mut con, &[name, &key, delta.abs().to_string().as_bytes()])
                };
                let current = model.get(&key);
                let want = match (current, int_text(current)) {
                    (None, _) => Some(delta),
                    (Some(_), Some(n)) => Some(n + delta),
                    (Some(_), None) => None,
                };
                match want {
                    Some(n) => {
                        model.insert(key.clone(), n.to_string().into_bytes());
                        (got, Value::Int(n))
                    }
                    None => (got, Value::SimpleString(not_int.clone())),
                }
            }
            12 => {
                let entry = model.entry(key.clone()).or_default();
                entry.extend_from_slice(&value);
                let n = entry.len() as i64;
                (run(&mut con, &[b"APPEND", &key, &value]), Value::Int(n))
            }
            13 => {
                (run(&mut con, &[b"STRLEN", &key]), Value::Int(model.get(&key).map_or(0, |v| v.len() as i64)))
            }
            14 => (run(&mut con, &[b"DBSIZE"]), Value::Int(model.len() as i64)),
            15 => {
                let kind = if model.contains_key(&key) { "string" } else { "none" };
                (run(&mut con, &[b"TYPE", &key]), Value::SimpleString(kind.into()))
            }
            _ => {
                let mut keys: Vec<Vec<u8>> = match run(&mut con, &[b"KEYS", b"k1*"]) {
                    Value::Array(items) => items
                        .into_iter()
                        .map(|v| match v {
                            Value::BulkString(b) => b,
                            other => panic!("{other:?}"),
                        })
                        .collect(),
                    other => panic!("KEYS answered {other:?}"),
                };
                keys.sort();
                let want: Vec<Value> =
                    model.keys().filter(|k| k.starts_with(b"k1")).map(|k| bulk(k)).collect();
                (Value::Array(keys.iter().map(|k| bulk(k)).collect()), Value::Array(want))
            }
        };
        assert_eq!(got, want, "{spec}, step {step}");
    }
    let scanned = scan_all(&mut con, "*", 7);
    assert_eq!(scanned, model.keys().cloned().collect::<HashSet<_>>(), "{spec}: SCAN sees every key");
    assert_eq!(run(&mut con, &[b"FLUSHDB"]), Value::Okay);
    assert_eq!(run(&mut con, &[b"DBSIZE"]), Value::Int(0));
}

/// Every key a full SCAN answers; fails if it does not end.
fn scan_all(con: &mut redis::Connection, pattern: &str, count: usize) -> HashSet<Vec<u8>> {
    let mut seen = HashSet::new();
    let mut cursor = 0u64;
    for _ in 0..100_000 {
        let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(count)
            .query(con)
            .unwrap();
        seen.extend(keys);
        if next == 0 {
            return seen;
        }
        cursor = next;
    }
    panic!("SCAN did not end");
}

#[test]
fn every_command_answers_as_a_map_would_on_a_hash_database() {
    model_run("casket.tkh#num_buckets=16", 1);
}

#[test]
fn every_command_answers_as_a_map_would_on_a_tree_database() {
    model_run("casket.tkt", 2);
}

/// SCAN visits every record present from the scan's start to its end,
/// while other records come and go, and ends.
#[test]
fn scan_survives_writes_on_hash_and_tree_databases() {
    for spec in ["scan.tkh#num_buckets=64", "scan.tkt", "#dbm=baby", "#dbm=stdhash"] {
        let dir = tempfile::tempdir().unwrap();
        let spec =
            if spec.starts_with('#') { spec.to_string() } else { format!("{}/{spec}", dir.path().display()) };
        let server = Server::start(&[&spec]);
        let mut con = server.client();
        let mut writer = server.client();
        for i in 0..600 {
            let _: () = redis::cmd("SET").arg(format!("stay{i}")).arg(i).query(&mut con).unwrap();
            let _: () = redis::cmd("SET").arg(format!("go{i}")).arg(i).query(&mut con).unwrap();
        }
        let mut seen = HashSet::new();
        let mut cursor = 0u64;
        let mut rounds = 0;
        loop {
            let (next, keys): (u64, Vec<String>) =
                redis::cmd("SCAN").arg(cursor).arg("COUNT").arg(25).query(&mut con).unwrap();
            seen.extend(keys);
            // Meanwhile records go and new ones come.
            let _: i64 = redis::cmd("DEL").arg(format!("go{rounds}")).query(&mut writer).unwrap();
            let _: () = redis::cmd("SET").arg(format!("new{rounds}")).arg(1).query(&mut writer).unwrap();
            rounds += 1;
            assert!(rounds < 10_000, "{spec}: SCAN did not end");
            if next == 0 {
                break;
            }
            cursor = next;
        }
        for i in 0..600 {
            assert!(seen.contains(&format!("stay{i}")), "{spec}: stay{i} was skipped");
        }
        let err = redis::cmd("SCAN").arg(cursor.max(1) + 12345).query::<Value>(&mut con).unwrap_err();
        assert!(error_text(&err).contains("unknown or expired SCAN cursor"), "{spec}: {err}");
        let matched = scan_all(&mut con, "stay1?", 1000);
        assert_eq!(matched.len(), 10, "{spec}: MATCH");
    }
}

#[test]
fn range_scans_ordered_databases_and_refuses_hash_ones() {
    let dir = tempfile::tempdir().unwrap();
    let tree = format!("{}/r.tkt", dir.path().display());
    let hash = format!("{}/r.tkh", dir.path().display());
    let server = Server::start(&[&tree, &hash]);
    let mut con = server.client();
    for k in ["a", "b", "c", "d", "e"] {
        let _: () = redis::cmd("SET").arg(k).arg(k.to_uppercase()).query(&mut con).unwrap();
    }
    let range = |con: &mut redis::Connection, args: &[&str]| -> Vec<String> {
        redis::cmd("RANGE").arg(args).query(con).unwrap()
    };
    assert_eq!(range(&mut con, &["[b", "(d"]), ["b", "B", "c", "C"]);
    assert_eq!(range(&mut con, &["-", "+", "LIMIT", "2", "NOVALUES"]), ["a", "b"]);
    assert_eq!(range(&mut con, &["(b", "[d", "REV"]), ["d", "D", "c", "C"]);
    assert_eq!(range(&mut con, &["-", "+", "REV", "NOVALUES"]), ["e", "d", "c", "b", "a"]);
    assert!(range(&mut con, &["[x", "+"]).is_empty());
    let err = redis::cmd("RANGE").arg("b").arg("+").query::<Value>(&mut con).unwrap_err();
    assert_eq!(error_text(&err), "ERR min or max not valid string range item");
    let _: () = redis::cmd("SELECT").arg(1).query(&mut con).unwrap();
    let err = redis::cmd("RANGE").arg("-").arg("+").query::<Value>(&mut con).unwrap_err();
    assert!(error_text(&err).contains("needs an ordered database"), "{err}");
    // The databases are apart.
    assert_eq!(redis::cmd("GET").arg("a").query::<Option<String>>(&mut con).unwrap(), None);
}

/// The error lines clients and people recognise, byte for byte.
#[test]
fn errors_use_redis_own_texts() {
    let server = Server::start(&["#dbm=stdhash"]);
    let mut raw = server.raw();
    let cases: &[(&[u8], &[u8])] = &[
        (b"*3\r\n$3\r\nFOO\r\n$1\r\na\r\n$2\r\nbc\r\n", b"-ERR unknown command 'FOO', with args beginning with: 'a' 'bc' \r\n"),
        // A command deliberately not served says so, and where to read why.
        (b"*3\r\n$5\r\nLPUSH\r\n$1\r\nl\r\n$1\r\nx\r\n", b"-ERR kura serve does not serve LPUSH: its values are strings, not lists (see docs/serve.md, \"Not served\")\r\n"),
        (b"*1\r\n$4\r\nexec\r\n", b"-ERR EXEC without MULTI\r\n"),
        (b"*1\r\n$3\r\nGET\r\n", b"-ERR wrong number of arguments for 'get' command\r\n"),
        (b"*3\r\n$3\r\nSET\r\n$1\r\nn\r\n$1\r\nx\r\n", b"+OK\r\n"),
        (b"*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n", b"-ERR value is not an integer or out of range\r\n"),
        (b"*3\r\n$6\r\nINCRBY\r\n$1\r\nm\r\n$3\r\n1.5\r\n", b"-ERR value is not an integer or out of range\r\n"),
        (b"*3\r\n$3\r\nSET\r\n$1\r\nm\r\n$19\r\n9223372036854775807\r\n", b"+OK\r\n"),
        (b"*2\r\n$4\r\nINCR\r\n$1\r\nm\r\n", b"-ERR increment or decrement would overflow\r\n"),
        (b"*2\r\n$6\r\nSELECT\r\n$1\r\n5\r\n", b"-ERR DB index is out of range\r\n"),
        (b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n", b"+OK\r\n"),
        (b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nZZ\r\n", b"-ERR syntax error\r\n"),
        (b"*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n", b"$2\r\nhi\r\n"),
        (b"*2\r\n$4\r\nAUTH\r\n$1\r\np\r\n", b"-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"),
    ];
    for (request, reply) in cases {
        assert_eq!(
            String::from_utf8_lossy(&exchange(&mut raw, request)),
            String::from_utf8_lossy(reply),
            "{}",
            String::from_utf8_lossy(request)
        );
    }
    // A new database has expiry (docs/serve.md, "Expiry").
    let got = exchange(&mut raw, b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nEX\r\n$2\r\n10\r\n");
    assert_eq!(got, b"+OK\r\n");
    assert_eq!(exchange(&mut raw, b"*2\r\n$3\r\nTTL\r\n$1\r\nk\r\n"), b":10\r\n");
}

#[test]
fn hello_3_switches_to_resp3_and_client_commands_work() {
    let server = Server::start(&["#dbm=stdhash"]);
    let mut raw = server.raw();
    let hello = exchange(&mut raw, b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n");
    assert!(
        hello.starts_with(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"),
        "{}",
        String::from_utf8_lossy(&hello)
    );
    assert_eq!(exchange(&mut raw, b"*2\r\n$3\r\nGET\r\n$1\r\nx\r\n"), b"_\r\n");
    assert_eq!(
        exchange(&mut raw, b"*2\r\n$5\r\nHELLO\r\n$1\r\n4\r\n"),
        b"-NOPROTO unsupported protocol version\r\n"
    );
    let mut con = server.client();
    let _: () = redis::cmd("CLIENT").arg("SETNAME").arg("tester").query(&mut con).unwrap();
    assert_eq!(redis::cmd("CLIENT").arg("GETNAME").query::<String>(&mut con).unwrap(), "tester");
    assert!(redis::cmd("CLIENT").arg("ID").query::<i64>(&mut con).unwrap() > 0);
    assert_eq!(redis::cmd("ECHO").arg("hey").query::<String>(&mut con).unwrap(), "hey");
    let _: () = redis::cmd("SAVE").query(&mut con).unwrap();
    assert_eq!(redis::cmd("BGSAVE").query::<String>(&mut con).unwrap(), "Background saving started");
    let count: i64 = redis::cmd("COMMAND").arg("COUNT").query(&mut con).unwrap();
    assert!(count > 30);
    let _: () = redis::cmd("SET").arg("a").arg("1").query(&mut con).unwrap();
    let info: String = redis::cmd("INFO").arg("commandstats").query(&mut con).unwrap();
    assert!(info.contains("cmdstat_set:calls=1,usec="), "{info}");
    let info: String = redis::cmd("INFO").query(&mut con).unwrap();
    assert!(info.contains("# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0"), "{info}");
    assert!(info.contains("connected_clients:2"), "{info}");
    let config: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("databases").query(&mut con).unwrap();
    assert_eq!(config, ["databases", "1"]);
    assert_eq!(redis::cmd("QUIT").query::<String>(&mut con).unwrap(), "OK");
}

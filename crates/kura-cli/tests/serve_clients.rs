//! `kura serve` with many clients, pipelines, AUTH, read-only mode, and
//! its shutdowns (SHUTDOWN and SIGTERM) keeping what was written.

mod serve_support;

use std::time::Duration;

use kuradb::dbm::poly::Params;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Access, Dbm};
use redis::Value;
use serve_support::{error_text, Server};

#[test]
fn pipelines_answer_in_order() {
    let server = Server::start(&["#dbm=stdhash"]);
    let mut con = server.client();
    let mut pipe = redis::pipe();
    for i in 0..3000 {
        pipe.cmd("SET").arg(format!("k{i}")).arg(i).ignore();
    }
    for i in 0..3000 {
        pipe.cmd("GET").arg(format!("k{i}"));
    }
    pipe.cmd("GET").arg("missing").cmd("INCR").arg("k5");
    let replies: Vec<Value> = pipe.query(&mut con).unwrap();
    assert_eq!(replies.len(), 3002);
    for (i, reply) in replies[..3000].iter().enumerate() {
        assert_eq!(reply, &Value::BulkString(i.to_string().into_bytes()));
    }
    assert_eq!(replies[3000], Value::Nil);
    assert_eq!(replies[3001], Value::Int(6));
}

#[test]
fn many_clients_at_once_each_see_their_own_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = format!("{}/many.tkh", dir.path().display());
    let server = Server::start(&[&path]);
    std::thread::scope(|s| {
        for t in 0..24 {
            let server = &server;
            s.spawn(move || {
                let mut con = server.client();
                for i in 0..200 {
                    let key = format!("t{t}-{i}");
                    let _: () = redis::cmd("SET").arg(&key).arg(i).query(&mut con).unwrap();
                    let got: i64 = redis::cmd("GET").arg(&key).query(&mut con).unwrap();
                    assert_eq!(got, i);
                    let _: i64 = redis::cmd("INCR").arg("shared").query(&mut con).unwrap();
                }
            });
        }
    });
    let mut con = server.client();
    assert_eq!(redis::cmd("GET").arg("shared").query::<i64>(&mut con).unwrap(), 24 * 200);
    assert_eq!(redis::cmd("DBSIZE").query::<i64>(&mut con).unwrap(), 24 * 200 + 1);
}

#[test]
fn requirepass_needs_auth_first() {
    let server = Server::start(&["#dbm=stdhash", "--requirepass", "s3cret"]);
    let mut con = server.client();
    let err = redis::cmd("GET").arg("k").query::<Value>(&mut con).unwrap_err();
    assert_eq!(error_text(&err), "NOAUTH Authentication required.");
    let err = redis::cmd("AUTH").arg("wrong").query::<Value>(&mut con).unwrap_err();
    assert_eq!(error_text(&err), "WRONGPASS invalid username-password pair or user is disabled.");
    let _: () = redis::cmd("AUTH").arg("s3cret").query(&mut con).unwrap();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con).unwrap();
    // A client library that authenticates from the URL.
    let url = format!("redis://:s3cret@{}/", server.address);
    let mut other =
        redis::Client::open(url).unwrap().get_connection_with_timeout(serve_support::TIMEOUT).unwrap();
    assert_eq!(redis::cmd("GET").arg("k").query::<String>(&mut other).unwrap(), "v");
    // HELLO with AUTH authenticates too.
    let mut raw = server.raw();
    let reply = serve_support::exchange(
        &mut raw,
        b"*5\r\n$5\r\nHELLO\r\n$1\r\n2\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n$6\r\ns3cret\r\n",
    );
    assert!(reply.starts_with(b"*14\r\n"), "{}", String::from_utf8_lossy(&reply));
}

#[test]
fn read_only_refuses_writes_and_serves_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.tkh");
    let db = PolyDbm::open(&path, Access::ReadWrite, &Params::new()).unwrap();
    db.set(b"k", b"v").unwrap();
    db.close().unwrap();
    let server = Server::start(&[path.to_str().unwrap(), "--read_only"]);
    let mut con = server.client();
    assert_eq!(redis::cmd("GET").arg("k").query::<String>(&mut con).unwrap(), "v");
    for cmd in [&["SET", "k", "w"][..], &["DEL", "k"], &["INCR", "n"], &["FLUSHDB"], &["MSET", "a", "b"]] {
        let err = redis::cmd(cmd[0]).arg(&cmd[1..]).query::<Value>(&mut con).unwrap_err();
        assert!(error_text(&err).starts_with("READONLY "), "{cmd:?}: {err}");
    }
    assert_eq!(redis::cmd("GET").arg("k").query::<String>(&mut con).unwrap(), "v");
}

fn written_then_stopped(stop: impl FnOnce(&Server, &mut redis::Connection)) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kept.tkh");
    let pid_file = dir.path().join("kura.pid");
    let server = Server::start(&[path.to_str().unwrap(), "--pid_file", pid_file.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&pid_file).unwrap().trim(), server.child.id().to_string());
    let mut con = server.client();
    for i in 0..500 {
        let _: () = redis::cmd("SET").arg(format!("k{i}")).arg(format!("v{i}")).query(&mut con).unwrap();
    }
    stop(&server, &mut con);
    let status = server.wait(Duration::from_secs(30));
    assert!(status.success(), "{status:?}");
    assert!(!pid_file.exists(), "the pid file is removed at exit");
    // Closed cleanly: reopens without recovery and holds every record.
    let db = PolyDbm::open(&path, Access::ReadOnly, &Params::new()).unwrap();
    assert!(db.is_healthy());
    assert_eq!(db.count().unwrap(), 500);
    assert_eq!(db.get(b"k499").unwrap().as_deref(), Some(&b"v499"[..]));
}

#[test]
fn shutdown_command_closes_the_databases_with_the_data() {
    written_then_stopped(|_, con| {
        // Redis closes the connection instead of answering SHUTDOWN.
        assert!(redis::cmd("SHUTDOWN").query::<Value>(con).is_err());
    });
}

#[test]
fn sigterm_closes_the_databases_with_the_data() {
    written_then_stopped(|server, _| server.terminate());
}

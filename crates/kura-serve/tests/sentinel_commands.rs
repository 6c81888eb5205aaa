//! The commands Sentinel and redis-cli send besides data commands: CLIENT
//! LIST, INFO and KILL (both forms), CONFIG SET/GET of the replica
//! priority, CONFIG REWRITE, and Sentinel's failover block (MULTI,
//! SLAVEOF, CONFIG REWRITE, CLIENT KILL TYPE normal and pubsub, EXEC).

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use kura_serve::Server;

const TIMEOUT: Duration = Duration::from_secs(10);

fn client(server: &Server) -> redis::Connection {
    let url = format!("redis://{}/", server.address());
    let con = redis::Client::open(url).unwrap().get_connection_with_timeout(TIMEOUT).expect("connects");
    con.set_read_timeout(Some(TIMEOUT)).unwrap();
    con
}

/// Each CLIENT LIST line as its fields, by id.
fn client_list(con: &mut redis::Connection) -> BTreeMap<u64, BTreeMap<String, String>> {
    let text: String = redis::cmd("CLIENT").arg("LIST").query(con).unwrap();
    text.lines()
        .map(|line| {
            let fields: BTreeMap<String, String> = line
                .split(' ')
                .map(|f| f.split_once('=').expect("name=value"))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            (fields["id"].parse().unwrap(), fields)
        })
        .collect()
}

/// Whether the server closed `stream` (reads end) within the timeout.
fn closed(stream: &mut std::net::TcpStream) -> bool {
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut buf = [0u8; 64];
    matches!(stream.read(&mut buf), Ok(0) | Err(_))
}

#[test]
fn client_list_shows_each_connection_in_redis_format() {
    let server =
        Server::builder(["#dbm=baby", "#dbm=baby"]).address("127.0.0.1:0").threads(2).start().unwrap();
    let mut me = client(&server);
    let mut other = client(&server);
    let my_id: u64 = redis::cmd("CLIENT").arg("ID").query(&mut me).unwrap();
    let other_id: u64 = redis::cmd("CLIENT").arg("ID").query(&mut other).unwrap();
    let _: () = redis::cmd("CLIENT").arg("SETNAME").arg("other-one").query(&mut other).unwrap();
    let _: () = redis::cmd("SELECT").arg(1).query(&mut other).unwrap();
    let list = client_list(&mut me);
    assert_eq!(list.len(), 2, "{list:?}");
    let mine = &list[&my_id];
    let theirs = &list[&other_id];
    for field in
        ["addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "multi", "cmd", "resp"]
    {
        assert!(mine.contains_key(field), "{field} missing from {mine:?}");
    }
    assert_eq!(mine["laddr"], server.address());
    assert_eq!((mine["cmd"].as_str(), mine["flags"].as_str()), ("client", "N"));
    assert_eq!(
        (theirs["name"].as_str(), theirs["db"].as_str(), theirs["cmd"].as_str()),
        ("other-one", "1", "select")
    );
    assert!(theirs["fd"].parse::<i32>().unwrap() > 0);
    let own: String = redis::cmd("CLIENT").arg("INFO").query(&mut me).unwrap();
    assert!(own.starts_with(&format!("id={my_id} addr={} ", mine["addr"])), "{own}");
    let normal: String = redis::cmd("CLIENT").arg("LIST").arg("TYPE").arg("pubsub").query(&mut me).unwrap();
    assert_eq!(normal, "", "nobody is subscribed");
    server.stop().unwrap();
}

#[test]
fn client_kill_closes_the_connections_it_names() {
    let server = Server::builder(["#dbm=baby"]).address("127.0.0.1:0").threads(2).start().unwrap();
    let mut me = client(&server);
    let mut victim = client(&server);
    let victim_id: u64 = redis::cmd("CLIENT").arg("ID").query(&mut victim).unwrap();
    let list = client_list(&mut me);
    let addr = list[&victim_id]["addr"].clone();

    // The old form: one address, OK or an error.
    let _: () = redis::cmd("CLIENT").arg("KILL").arg(&addr).query(&mut me).unwrap();
    let err = redis::cmd("CLIENT").arg("KILL").arg("10.9.9.9:1").query::<()>(&mut me).unwrap_err();
    assert!(err.to_string().contains("No such client"), "{err}");
    assert!(redis::cmd("PING").query::<String>(&mut victim).is_err(), "the killed connection is closed");

    // The filter form: TYPE normal spares the caller (SKIPME yes) and subscribers.
    let mut normal = std::net::TcpStream::connect(server.address()).unwrap();
    let mut subscriber = std::net::TcpStream::connect(server.address()).unwrap();
    std::io::Write::write_all(&mut subscriber, b"*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\nc\r\n").unwrap();
    subscriber.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut confirmation = [0u8; 30];
    subscriber.read_exact(&mut confirmation).unwrap();
    let killed: i64 = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("normal").query(&mut me).unwrap();
    assert_eq!(killed, 1);
    assert!(closed(&mut normal));
    let killed: i64 = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("pubsub").query(&mut me).unwrap();
    assert_eq!(killed, 1);
    assert!(closed(&mut subscriber));
    let me_id: u64 = redis::cmd("CLIENT").arg("ID").query(&mut me).unwrap();
    let killed: i64 = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(me_id + 1000).query(&mut me).unwrap();
    assert_eq!(killed, 0);
    let err = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("nobody").query::<i64>(&mut me).unwrap_err();
    assert!(err.to_string().contains("Unknown client type 'nobody'"), "{err}");
    // SKIPME no: the caller goes too, after its reply.
    let killed: i64 =
        redis::cmd("CLIENT").arg("KILL").arg("ID").arg(me_id).arg("SKIPME").arg("no").query(&mut me).unwrap();
    assert_eq!(killed, 1);
    assert!(redis::cmd("PING").query::<String>(&mut me).is_err());
    server.stop().unwrap();
}

#[test]
fn config_sets_the_replica_priority_and_rewrite_answers_as_redis_without_a_file() {
    let server = Server::builder(["#dbm=baby"]).address("127.0.0.1:0").start().unwrap();
    let mut con = client(&server);
    let got: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("replica-priority").query(&mut con).unwrap();
    assert_eq!(got, ["replica-priority", "100"]);
    let _: () = redis::cmd("CONFIG").arg("SET").arg("slave-priority").arg(7).query(&mut con).unwrap();
    let text: String = redis::cmd("INFO").arg("server").query(&mut con).unwrap();
    assert!(text.contains("run_id:"), "{text}");
    let got: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("replica-priority").query(&mut con).unwrap();
    assert_eq!(got, ["replica-priority", "7"]);
    let err =
        redis::cmd("CONFIG").arg("SET").arg("replica-priority").arg(-1).query::<()>(&mut con).unwrap_err();
    assert!(err.to_string().contains("argument must be between"), "{err}");
    let err = redis::cmd("CONFIG").arg("SET").arg("maxclients").arg(5).query::<()>(&mut con).unwrap_err();
    assert!(err.to_string().contains("not supported"), "{err}");
    let err = redis::cmd("CONFIG").arg("REWRITE").query::<()>(&mut con).unwrap_err();
    assert!(err.to_string().contains("The server is running without a config file"), "{err}");
    server.stop().unwrap();
}

#[test]
fn sentinels_failover_block_runs_whole() {
    let server = Server::builder(["#dbm=baby"]).address("127.0.0.1:0").threads(2).start().unwrap();
    let mut sentinel = std::net::TcpStream::connect(server.address()).unwrap();
    sentinel.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut bystander = client(&server);
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut bystander).unwrap();
    let block: &[&[&str]] = &[
        &["MULTI"],
        &["SLAVEOF", "NO", "ONE"],
        &["CONFIG", "REWRITE"],
        &["CLIENT", "KILL", "TYPE", "normal"],
        &["CLIENT", "KILL", "TYPE", "pubsub"],
        &["EXEC"],
    ];
    let mut request = String::new();
    for words in block {
        request.push_str(&format!("*{}\r\n", words.len()));
        for word in *words {
            request.push_str(&format!("${}\r\n{word}\r\n", word.len()));
        }
    }
    std::io::Write::write_all(&mut sentinel, request.as_bytes()).unwrap();
    // The block is queued whole and runs whole: a command's error at EXEC
    // (no config file to rewrite) does not stop the others.
    let expected = "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n\
                    *4\r\n+OK\r\n-ERR The server is running without a config file\r\n:1\r\n:0\r\n";
    let mut got = vec![0u8; expected.len()];
    sentinel.read_exact(&mut got).unwrap();
    assert_eq!(String::from_utf8_lossy(&got), expected);
    assert!(redis::cmd("GET").arg("k").query::<String>(&mut bystander).is_err(), "the bystander was killed");
    let got: String = redis::cmd("GET").arg("k").query(&mut client(&server)).unwrap();
    assert_eq!(got, "v", "the data stays");
    server.stop().unwrap();
}

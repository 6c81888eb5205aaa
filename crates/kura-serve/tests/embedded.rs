//! The server run inside a program: started on an ephemeral loopback port,
//! used by a stock Redis client, stopped with its databases closed.

use std::time::Duration;

use kura_serve::Server;
use kuradb::dbm::Access;

const TIMEOUT: Duration = Duration::from_secs(20);

fn client(server: &Server) -> redis::Connection {
    let url = format!("redis://{}/", server.address());
    let con = redis::Client::open(url).unwrap().get_connection_with_timeout(TIMEOUT).expect("connects");
    con.set_read_timeout(Some(TIMEOUT)).unwrap();
    con
}

#[test]
fn an_embedded_server_serves_a_redis_client_then_stops_and_closes_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kh");
    let spec = format!("{}#num_buckets=100", path.display());
    let server =
        Server::builder([spec.as_str(), "#dbm=baby"]).address("127.0.0.1:0").threads(2).start().unwrap();
    assert!(server.address().starts_with("127.0.0.1:"), "{}", server.address());
    assert_ne!(server.address(), "127.0.0.1:0", "the port it got, not the one asked for");

    let mut con = client(&server);
    let () = redis::cmd("SET").arg("fruit").arg("apple").query(&mut con).unwrap();
    let got: Option<String> = redis::cmd("GET").arg("fruit").query(&mut con).unwrap();
    assert_eq!(got.as_deref(), Some("apple"));
    let () = redis::cmd("SELECT").arg(1).query(&mut con).unwrap();
    let size: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(size, 0, "SELECT 1 is the second database, the on-memory one");
    drop(con);

    server.stop().unwrap();
    // Closed: the file opens again for writing, with the record in it.
    let db = kuradb::PolyDbm::open(&path, Access::ReadWrite, &Default::default()).unwrap();
    assert_eq!(kuradb::dbm::Dbm::get(&db, b"fruit").unwrap().as_deref(), Some(&b"apple"[..]));
}

#[test]
fn a_server_that_cannot_open_its_database_says_why_instead_of_listening() {
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("{}#dbm=nosuchclass", dir.path().join("x").display());
    let err = Server::builder([spec]).address("127.0.0.1:0").start().err().expect("refused");
    assert!(err.to_string().contains("nosuchclass"), "{err}");
}

#[test]
fn dropping_the_server_stops_it() {
    let server = Server::builder(["#dbm=baby"]).address("127.0.0.1:0").start().unwrap();
    let address = server.address().to_string();
    drop(server);
    assert!(std::net::TcpStream::connect(&address).is_err(), "nothing listens on {address} after the drop");
}

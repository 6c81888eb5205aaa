//! What a misbehaving client costs: its own connection, never the server's
//! memory or other clients' service (raw sockets sending garbage, huge
//! announced lengths, half frames), and the connection limit.

mod serve_support;

use std::io::Write;

use serve_support::{closed_by_peer, exchange, Server};

fn other_clients_still_served(server: &Server) {
    let mut con = server.client();
    let _: () = redis::cmd("SET").arg("alive").arg("yes").query(&mut con).unwrap();
    assert_eq!(redis::cmd("GET").arg("alive").query::<String>(&mut con).unwrap(), "yes");
}

#[test]
fn a_huge_announced_bulk_is_refused_on_its_header() {
    let server = Server::start(&["#dbm=stdhash", "--max_request_size", "1048576"]);
    let mut raw = server.raw();
    // 1 GB announced, nothing of it sent: answered at once, not waited for.
    let reply = exchange(&mut raw, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000000\r\n");
    assert_eq!(reply, b"-ERR Protocol error: invalid bulk length\r\n");
    assert!(closed_by_peer(&mut raw));
    // Under the bulk limit each, over the request limit together.
    let mut raw = server.raw();
    raw.write_all(b"*3\r\n$3\r\nSET\r\n$600000\r\n").unwrap();
    raw.write_all(&vec![b'x'; 600_000]).unwrap();
    let reply = exchange(&mut raw, b"\r\n$600000\r\n");
    assert!(
        String::from_utf8_lossy(&reply).contains("--max_request_size"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
    assert!(closed_by_peer(&mut raw));
    other_clients_still_served(&server);
}

#[test]
fn garbage_and_half_frames_cost_only_their_connection() {
    let server = Server::start(&["#dbm=stdhash"]);
    for garbage in [&b"hello world\r\n"[..], b"*1\r\n:12\r\n", b"*2\r\n$3\r\nGET\r\n$x\r\n", &[b'*'; 100]] {
        let mut raw = server.raw();
        let reply = exchange(&mut raw, garbage);
        assert!(
            reply.starts_with(b"-ERR Protocol error"),
            "{garbage:?}: {}",
            String::from_utf8_lossy(&reply)
        );
        assert!(closed_by_peer(&mut raw), "{garbage:?}");
    }
    // A half frame, then the client goes away.
    let mut raw = server.raw();
    raw.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nabc").unwrap();
    drop(raw);
    // A flood of pipelined requests whose replies are never read.
    let mut flood = server.raw();
    flood.set_nonblocking(true).unwrap();
    let request = b"*3\r\n$3\r\nSET\r\n$5\r\nflood\r\n$3\r\nabc\r\n".repeat(10_000);
    for _ in 0..50 {
        if flood.write_all(&request).is_err() {
            break;
        }
    }
    other_clients_still_served(&server);
    drop(flood);
    other_clients_still_served(&server);
    let mut con = server.client();
    let info: String = redis::cmd("INFO").arg("stats").query(&mut con).unwrap();
    assert!(info.contains("protocol_errors:4"), "{info}");
}

#[test]
fn connections_past_max_clients_are_refused() {
    let server = Server::start(&["#dbm=stdhash", "--max_clients", "2"]);
    let mut first = server.client();
    let _second = server.client();
    let mut third = server.raw();
    let reply = exchange(&mut third, b"*1\r\n$4\r\nPING\r\n");
    assert_eq!(reply, b"-ERR max number of clients reached\r\n");
    assert_eq!(redis::cmd("PING").query::<String>(&mut first).unwrap(), "PONG");
}

#[test]
fn unix_socket_serves_too() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("kura.sock");
    let server = Server::start_at(&format!("unix:{}", socket.display()), &["#dbm=stdhash"]);
    assert_eq!(server.address, format!("unix:{}", socket.display()));
    let url = format!("redis+unix://{}", socket.display());
    let mut con =
        redis::Client::open(url).unwrap().get_connection_with_timeout(serve_support::TIMEOUT).unwrap();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con).unwrap();
    assert_eq!(redis::cmd("GET").arg("k").query::<String>(&mut con).unwrap(), "v");
}

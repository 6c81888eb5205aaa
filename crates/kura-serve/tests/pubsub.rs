//! Publish/subscribe over the wire, byte for byte as Redis answers: the
//! confirmations, messages to channel and pattern subscribers, the RESP2
//! subscribed mode and RESP3's push frames, PUBSUB's counts.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use kura_serve::Server;

/// A raw connection: requests written as RESP arrays, replies compared as bytes.
struct Wire(TcpStream);

impl Wire {
    fn open(server: &Server) -> Wire {
        let stream = TcpStream::connect(server.address()).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Wire(stream)
    }

    fn send(&mut self, words: &[&str]) {
        let mut out = format!("*{}\r\n", words.len());
        for word in words {
            out.push_str(&format!("${}\r\n{word}\r\n", word.len()));
        }
        self.0.write_all(out.as_bytes()).unwrap();
    }

    /// Reads exactly `expected`'s length and compares.
    fn expect(&mut self, expected: &str) {
        let mut got = vec![0u8; expected.len()];
        self.0.read_exact(&mut got).unwrap_or_else(|e| panic!("waiting for {expected:?}: {e}"));
        assert_eq!(String::from_utf8_lossy(&got), expected);
    }

    fn call(&mut self, words: &[&str], expected: &str) {
        self.send(words);
        self.expect(expected);
    }
}

#[test]
fn channel_and_pattern_subscribers_receive_what_is_published() {
    let server = Server::builder(["#dbm=baby"]).address("127.0.0.1:0").threads(2).start().unwrap();
    let mut sub = Wire::open(&server);
    let mut psub = Wire::open(&server);
    let mut publisher = Wire::open(&server);
    sub.call(
        &["SUBSCRIBE", "news", "sport"],
        "*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$5\r\nsport\r\n:2\r\n",
    );
    psub.call(&["PSUBSCRIBE", "n?w*"], "*3\r\n$10\r\npsubscribe\r\n$4\r\nn?w*\r\n:1\r\n");
    publisher.call(&["PUBLISH", "news", "hello"], ":2\r\n");
    sub.expect("*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n");
    psub.expect("*4\r\n$8\r\npmessage\r\n$4\r\nn?w*\r\n$4\r\nnews\r\n$5\r\nhello\r\n");
    publisher.call(&["PUBLISH", "weather", "rain"], ":0\r\n");
    publisher.call(&["PUBSUB", "CHANNELS"], "*2\r\n$4\r\nnews\r\n$5\r\nsport\r\n");
    publisher.call(&["PUBSUB", "CHANNELS", "s*"], "*1\r\n$5\r\nsport\r\n");
    publisher.call(&["PUBSUB", "NUMSUB", "news", "none"], "*4\r\n$4\r\nnews\r\n:1\r\n$4\r\nnone\r\n:0\r\n");
    publisher.call(&["PUBSUB", "NUMPAT"], ":1\r\n");

    // RESP2's subscribed mode: only the subscription commands, PING as an array.
    sub.call(
        &["GET", "k"],
        "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this \
         context\r\n",
    );
    sub.call(&["PING"], "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    sub.call(&["UNSUBSCRIBE", "news"], "*3\r\n$11\r\nunsubscribe\r\n$4\r\nnews\r\n:1\r\n");
    sub.call(&["UNSUBSCRIBE"], "*3\r\n$11\r\nunsubscribe\r\n$5\r\nsport\r\n:0\r\n");
    sub.call(&["UNSUBSCRIBE"], "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n");
    sub.call(&["PING"], "+PONG\r\n");
    sub.call(&["GET", "k"], "$-1\r\n");
    publisher.call(&["PUBLISH", "news", "again"], ":1\r\n");

    // A subscriber that leaves is forgotten.
    drop(psub);
    let mut waited = 0;
    loop {
        publisher.send(&["PUBSUB", "NUMPAT"]);
        let mut reply = [0u8; 4];
        publisher.0.read_exact(&mut reply).unwrap();
        if &reply == b":0\r\n" {
            break;
        }
        waited += 1;
        assert!(waited < 200, "the pattern of a closed connection is still counted");
        std::thread::sleep(Duration::from_millis(10));
    }
    publisher.call(&["SUBSCRIBE"], "-ERR wrong number of arguments for 'subscribe' command\r\n");
    publisher.call(&["MULTI"], "+OK\r\n");
    publisher.call(&["SUBSCRIBE", "x"], "-ERR Command not allowed inside a transaction\r\n");
    publisher.call(&["DISCARD"], "+OK\r\n");
    server.stop().unwrap();
}

#[test]
fn resp3_subscribers_get_push_frames_and_may_run_any_command() {
    let server = Server::builder(["#dbm=baby"]).address("127.0.0.1:0").start().unwrap();
    let mut sub = Wire::open(&server);
    sub.send(&["HELLO", "3"]);
    // The HELLO map's length varies with nothing here, but it is read whole
    // by asking for a PING after it and reading up to its answer.
    sub.send(&["PING"]);
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"+PONG\r\n") {
        sub.0.read_exact(&mut byte).unwrap();
        seen.push(byte[0]);
    }
    sub.call(&["SUBSCRIBE", "c"], ">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n");
    sub.call(&["SET", "k", "v"], "+OK\r\n");
    // Its own message comes after the reply of the batch that published it.
    sub.call(&["PUBLISH", "c", "m"], ":1\r\n>3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n");
    sub.call(&["RESET"], "+RESET\r\n");
    sub.call(&["PUBSUB", "NUMSUB", "c"], "*2\r\n$1\r\nc\r\n:0\r\n");
    server.stop().unwrap();
}

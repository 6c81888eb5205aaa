//! Starting `kura serve` for a test: the built binary on an ephemeral port
//! of 127.0.0.1, with clients that time out instead of hanging.

#![allow(dead_code)] // Each test file uses its own part of the support.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The longest any one client call may take before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// A running `kura serve`, killed when dropped if still running.
pub struct Server {
    pub child: Child,
    /// `127.0.0.1:PORT` or `unix:PATH`.
    pub address: String,
}

impl Server {
    /// Starts `kura serve ARGS... --address 127.0.0.1:0` and waits until it listens.
    pub fn start(args: &[&str]) -> Server {
        Server::start_at("127.0.0.1:0", args)
    }

    /// Starts `kura serve` listening on `address`.
    pub fn start_at(address: &str, args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kura"))
            .arg("serve")
            .args(args)
            .args(["--address", address, "--log_level", "warn", "--threads", "2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("kura serve starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(TIMEOUT).expect("kura serve says where it listens in time");
        let address = line.trim().strip_prefix("listening on ").unwrap_or_else(|| {
            let _ = child.kill();
            panic!("kura serve did not start: {line:?}")
        });
        Server { address: address.to_string(), child }
    }

    /// The port listened on.
    pub fn port(&self) -> u16 {
        self.address.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// A client of the `redis` crate.
    pub fn client(&self) -> redis::Connection {
        let url = format!("redis://{}/", self.address);
        let con = redis::Client::open(url).unwrap().get_connection_with_timeout(TIMEOUT).expect("connects");
        con.set_read_timeout(Some(TIMEOUT)).unwrap();
        con.set_write_timeout(Some(TIMEOUT)).unwrap();
        con
    }

    /// A raw TCP socket to the server.
    pub fn raw(&self) -> TcpStream {
        let stream = TcpStream::connect(&self.address).expect("connects");
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        stream.set_write_timeout(Some(TIMEOUT)).unwrap();
        stream
    }

    /// Waits for the process to end by itself; its exit status.
    pub fn wait(mut self, within: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "kura serve did not stop within {within:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Sends raw bytes and reads the reply until `expected_len` bytes or the
/// connection ends.
pub fn exchange(stream: &mut TcpStream, request: &[u8]) -> Vec<u8> {
    stream.write_all(request).unwrap();
    let mut out = vec![0u8; 64 * 1024];
    let n = stream.read(&mut out).unwrap_or(0);
    out.truncate(n);
    out
}

/// Reads until the peer closes (or the timeout); whether it closed.
pub fn closed_by_peer(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + TIMEOUT;
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
    false
}

/// The text of an error reply, as `CODE detail`.
pub fn error_text(e: &redis::RedisError) -> String {
    format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or(""))
}

/// A fresh path in `dir`.
pub fn path_in(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

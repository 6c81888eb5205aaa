//! What the wire tests share: a raw RESP connection that reads whole
//! replies as text, and a server on a free loopback port.

// Each test file uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use kura_serve::Server;

/// How long a test waits for a reply, or for something to happen.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// A raw connection: sends commands, reads whole replies as text.
pub struct Raw {
    out: TcpStream,
    input: BufReader<TcpStream>,
}

impl Raw {
    pub fn new(server: &Server) -> Raw {
        let out = TcpStream::connect(server.address()).unwrap();
        out.set_read_timeout(Some(TIMEOUT)).unwrap();
        Raw { input: BufReader::new(out.try_clone().unwrap()), out }
    }

    /// Sends one command and answers its reply, an array's items joined
    /// by commas in brackets.
    pub fn call(&mut self, words: &[&str]) -> String {
        let mut request = format!("*{}\r\n", words.len());
        for w in words {
            request.push_str(&format!("${}\r\n{w}\r\n", w.len()));
        }
        self.out.write_all(request.as_bytes()).unwrap();
        self.reply()
    }

    /// [`Raw::call`] of a command whose words are split at spaces.
    pub fn send(&mut self, command: &str) -> String {
        self.call(&command.split(' ').collect::<Vec<_>>())
    }

    /// The integer reply of `command` (words split at spaces).
    pub fn int(&mut self, command: &str) -> i64 {
        let reply = self.send(command);
        reply.strip_prefix(':').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{command}: {reply}"))
    }

    pub fn line(&mut self) -> String {
        let mut line = String::new();
        self.input.read_line(&mut line).unwrap();
        line.trim_end().to_string()
    }

    pub fn reply(&mut self) -> String {
        let line = self.line();
        match line.as_bytes()[0] {
            b'$' if line != "$-1" => {
                let n: usize = line[1..].parse().unwrap();
                let mut data = vec![0; n + 2];
                self.input.read_exact(&mut data).unwrap();
                String::from_utf8_lossy(&data[..n]).into_owned()
            }
            b'*' if line != "*-1" => {
                let n: usize = line[1..].parse().unwrap();
                let items: Vec<String> = (0..n).map(|_| self.reply()).collect();
                format!("[{}]", items.join(", "))
            }
            _ => line,
        }
    }
}

/// A server of `specs` on a free loopback port.
pub fn start(specs: &[&str]) -> Server {
    Server::builder(specs.iter().copied()).address("127.0.0.1:0").threads(2).start().unwrap()
}

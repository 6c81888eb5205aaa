//! Where the server listens: a TCP address (`host:port`) or a Unix socket
//! (`unix:PATH`), and the connections it accepts there.

use std::path::PathBuf;

use kuradb::{Error, ErrorKind, Result};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

/// A bound listener.
pub enum Listener {
    /// A TCP socket.
    Tcp(TcpListener),
    /// A Unix socket, and its path (removed when the server stops).
    Unix(UnixListener, PathBuf),
}

/// An accepted connection and its peer's address, for logs.
pub enum Accepted {
    /// Over TCP.
    Tcp(TcpStream, String),
    /// Over the Unix socket.
    Unix(UnixStream, String),
}

impl Listener {
    /// Binds `address`. A Unix socket file left by a server that did not
    /// stop cleanly is replaced; any other file there is an error.
    pub async fn bind(address: &str) -> Result<Listener> {
        if let Some(path) = address.strip_prefix("unix:") {
            let path = PathBuf::from(path);
            if let Ok(meta) = std::fs::symlink_metadata(&path) {
                use std::os::unix::fs::FileTypeExt;
                if !meta.file_type().is_socket() {
                    return Err(Error::new(
                        ErrorKind::Duplication,
                        format!("--address {address}: {} exists and is not a socket", path.display()),
                    ));
                }
                std::fs::remove_file(&path).map_err(|e| Error::io("removing the old socket", &path, e))?;
            }
            let listener = UnixListener::bind(&path).map_err(|e| Error::io("listening on", &path, e))?;
            return Ok(Listener::Unix(listener, path));
        }
        TcpListener::bind(address).await.map(Listener::Tcp).map_err(|e| {
            Error::new(ErrorKind::System, format!("--address {address}: cannot listen there: {e}"))
        })
    }

    /// The address bound, as a client would name it (the port chosen for `:0`).
    pub fn local_address(&self) -> String {
        match self {
            Listener::Tcp(l) => l.local_addr().map_or_else(|e| format!("?({e})"), |a| a.to_string()),
            Listener::Unix(_, path) => format!("unix:{}", path.display()),
        }
    }

    /// The next connection.
    pub async fn accept(&self) -> std::io::Result<Accepted> {
        match self {
            Listener::Tcp(l) => {
                let (stream, peer) = l.accept().await?;
                // Replies go out as soon as they are written, not batched by Nagle.
                let _ = stream.set_nodelay(true);
                Ok(Accepted::Tcp(stream, peer.to_string()))
            }
            Listener::Unix(l, path) => {
                let (stream, _) = l.accept().await?;
                Ok(Accepted::Unix(stream, format!("unix:{}", path.display())))
            }
        }
    }

    /// Removes the socket file of a Unix listener.
    pub fn remove_socket(&self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

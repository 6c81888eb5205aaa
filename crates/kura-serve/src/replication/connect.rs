//! How a replica reaches its master: a TCP connection, TLS over it when
//! `--replica_tls` is given (the master's certificate checked against
//! `--replica_tls_ca` and the name of the master), and `AUTH` with
//! `--masterauth` before anything else is asked.

use std::fmt;

use bytes::BytesMut;
use kuradb::{Error, ErrorKind, Result};
use redis_protocol::resp2::decode::decode_bytes_mut;
use redis_protocol::resp2::types::BytesFrame;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::Target;
use crate::reply::Reply;

/// The most bytes a master may send in answer to AUTH (its reply is a
/// line; more is no Redis server talking).
const MAX_AUTH_REPLY: usize = 4096;

/// A connection to the master, over TCP or TLS.
pub trait LinkStream: AsyncRead + AsyncWrite + Unpin + Send {}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> LinkStream for S {}

/// What a replica needs to be let in by a secured master.
#[derive(Clone, Default)]
pub struct LinkSecurity {
    /// The password sent with AUTH before REPLSYNC (`--masterauth`).
    pub masterauth: Option<String>,
    /// TLS for the link (`--replica_tls`).
    pub tls: Option<LinkTls>,
}

/// TLS for a replica's link.
#[derive(Clone)]
pub struct LinkTls {
    /// The client side of rustls, with the CA and the replica's certificate.
    pub connector: TlsConnector,
    /// The name the master's certificate must carry, when it is not the
    /// host the replica connects to (`--replica_tls_name`).
    pub name: Option<ServerName<'static>>,
}

impl LinkTls {
    /// TLS through `connector`, verifying `name` instead of the host if given.
    pub fn new(connector: TlsConnector, name: Option<&str>) -> Result<LinkTls> {
        let name = name
            .map(|n| {
                ServerName::try_from(n.to_string()).map_err(|e| {
                    Error::new(ErrorKind::InvalidArgument, format!("--replica_tls_name {n:?}: {e}"))
                })
            })
            .transpose()?;
        Ok(LinkTls { connector, name })
    }
}

impl fmt::Debug for LinkSecurity {
    /// Never shows the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinkSecurity")
            .field("masterauth", &self.masterauth.as_ref().map(|_| "…"))
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// Connects to `target`, with TLS and AUTH as `security` asks; bytes the
/// master sent beyond AUTH's answer are left in `input`. The error says
/// which step failed (connecting, the handshake, the password).
pub async fn open(
    target: &Target,
    security: &LinkSecurity,
    input: &mut BytesMut,
) -> std::result::Result<Box<dyn LinkStream>, String> {
    let tcp = TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("connecting: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let mut stream: Box<dyn LinkStream> = match &security.tls {
        None => Box::new(tcp),
        Some(tls) => {
            let name = match &tls.name {
                Some(name) => name.clone(),
                None => ServerName::try_from(target.host.clone()).map_err(|e| {
                    format!(
                        "{:?} is no name a certificate can carry ({e}): give --replica_tls_name",
                        target.host
                    )
                })?,
            };
            let stream = tls
                .connector
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS handshake with the master: {e}"))?;
            Box::new(stream)
        }
    };
    if let Some(password) = &security.masterauth {
        authenticate(&mut stream, password, input).await?;
    }
    Ok(stream)
}

async fn authenticate(
    stream: &mut Box<dyn LinkStream>,
    password: &str,
    input: &mut BytesMut,
) -> std::result::Result<(), String> {
    let mut out = BytesMut::new();
    Reply::Array(vec![Reply::bulk("AUTH"), Reply::bulk(password.to_string())]).encode(2, &mut out);
    let sent = async { stream.write_all(&out).await.and(stream.flush().await) };
    sent.await.map_err(|e| format!("sending AUTH: {e}"))?;
    let reply = loop {
        match decode_bytes_mut(input) {
            Ok(Some((frame, _, _))) => break frame,
            Ok(None) => {}
            Err(e) => return Err(format!("not RESP from the master: {}", e.details())),
        }
        if input.len() > MAX_AUTH_REPLY {
            return Err("the master's answer to AUTH is no reply".to_string());
        }
        input.reserve(MAX_AUTH_REPLY);
        match stream.read_buf(input).await {
            Ok(0) => return Err("the master closed the link before answering AUTH".to_string()),
            Ok(_) => {}
            Err(e) => return Err(format!("reading the answer to AUTH: {e}")),
        }
    };
    match reply {
        BytesFrame::SimpleString(s) if &s[..] == b"OK" => Ok(()),
        BytesFrame::Error(text) => Err(format!("the master refused --masterauth: {text}")),
        other => Err(format!("unexpected answer to AUTH from the master: {other:?}")),
    }
}

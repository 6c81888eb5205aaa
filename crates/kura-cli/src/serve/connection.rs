//! One client connection: read what the client sent, run the complete
//! requests as one batch (in place when it is short, on the blocking pool
//! otherwise: see `execution`), write
//! the replies, and again. Input is read only when no complete request is
//! buffered, so a client pipelining faster than it reads replies is slowed
//! by its own socket, never by the server's memory; a protocol error is
//! answered and ends that connection alone.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::dispatch::run_batch;
use super::execution::{self, Need};
use super::reply::Reply;
use super::request::next_request;
use super::state::{After, Server, Session};

/// The most requests run as one batch (a pipeline longer than this runs in
/// several, with the replies of each written before the next).
const MAX_BATCH: usize = 1024;

/// The least room made for one read.
const READ_CHUNK: usize = 16 * 1024;

/// Serves one client until it leaves, errs, or the server shuts down.
pub async fn serve<S>(server: Arc<Server>, mut stream: S, peer: String)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let mut shutdown = server.shutdown_signal();
    let mut session = Some(Session::new(&server, peer.clone()));
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut output = BytesMut::with_capacity(READ_CHUNK);
    let limit = server.settings.max_request_size;
    log::debug!("client {peer} connected");
    loop {
        let mut batch: Vec<Vec<Bytes>> = Vec::new();
        let mut fatal = None;
        let buffered = input.len();
        while batch.len() < MAX_BATCH {
            match next_request(&mut input, limit) {
                Ok(Some(request)) => batch.push(request),
                Ok(None) => break,
                Err(e) => {
                    fatal = Some(e);
                    break;
                }
            }
        }
        let full = batch.len() == MAX_BATCH;
        if !batch.is_empty() {
            let Some(mut current) = session.take() else { return };
            let need = execution::need(&server, &current, &batch, buffered - input.len());
            let in_place = match need {
                Need::Nothing => Some(None),
                Need::Short => server.gate.try_short().map(Some),
                Need::Long => None,
            };
            if let Some(_short) = in_place {
                run_batch(&server, &mut current, &batch, &mut output);
                // The requests' words share the input buffer: once they are
                // gone, the next read reuses it instead of allocating anew.
                drop(batch);
            } else {
                let shared = Arc::clone(&server);
                let mut out = std::mem::take(&mut output);
                let ran = tokio::task::spawn_blocking(move || {
                    let _long = shared.gate.long();
                    run_batch(&shared, &mut current, &batch, &mut out);
                    (current, out)
                })
                .await;
                match ran {
                    Ok((back, out)) => (current, output) = (back, out),
                    Err(e) => {
                        log::error!(
                            "client {peer}: a command failed unexpectedly: {e}; closing the connection"
                        );
                        return;
                    }
                }
            }
            let after = current.after;
            let feed = current.feed.take();
            session = Some(current);
            if let Some(plan) = feed {
                if write(&server, &mut stream, &mut output).await {
                    super::replication::feed(Arc::clone(&server), stream, peer, plan).await;
                }
                return;
            }
            if !write(&server, &mut stream, &mut output).await || after != After::Continue {
                let _ = stream.shutdown().await;
                return;
            }
        }
        if let Some(e) = fatal {
            server.stats.protocol_errors.fetch_add(1, Relaxed);
            log::info!("client {peer}: {}; closing the connection", e.0);
            Reply::Error(e.0).encode(session.as_ref().map_or(2, |s| s.protocol), &mut output);
            write(&server, &mut stream, &mut output).await;
            let _ = stream.shutdown().await;
            return;
        }
        if *shutdown.borrow() {
            return;
        }
        if full {
            continue;
        }
        input.reserve(READ_CHUNK.max(input.len()));
        tokio::select! {
            read = stream.read_buf(&mut input) => match read {
                Ok(0) | Err(_) => {
                    log::debug!("client {peer} left");
                    return;
                }
                Ok(n) => {
                    server.stats.input_bytes.fetch_add(n as u64, Relaxed);
                }
            },
            _ = shutdown.changed() => return,
        }
    }
}

/// Writes and empties `output`; false if the client is gone.
async fn write<S: AsyncWrite + Unpin>(server: &Server, stream: &mut S, output: &mut BytesMut) -> bool {
    if output.is_empty() {
        return true;
    }
    let ok = stream.write_all(output).await.is_ok() && stream.flush().await.is_ok();
    server.stats.output_bytes.fetch_add(output.len() as u64, Relaxed);
    output.clear();
    ok
}

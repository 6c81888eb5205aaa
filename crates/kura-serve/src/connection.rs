//! One client connection: read what the client sent, run the complete
//! requests as one batch (in place when it is short, on the blocking pool
//! otherwise: see `execution`), write
//! the replies, and again. Input is read only when no complete request is
//! buffered, so a client pipelining faster than it reads replies is slowed
//! by its own socket, never by the server's memory; a protocol error is
//! answered and ends that connection alone.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::dispatch::run_batch;
use super::execution::{self, Need};
use super::pubsub::{Inbox, Message};
use super::reply::Reply;
use super::request::Batch;
use super::state::{After, Server, Session};

/// The most requests run as one batch (a pipeline longer than this runs in
/// several, with the replies of each written before the next).
const MAX_BATCH: usize = 1024;

/// The least room made for one read.
const READ_CHUNK: usize = 16 * 1024;

/// Serves one client until it leaves, errs, or the server shuts down.
pub async fn serve<S>(server: Arc<Server>, mut stream: S, peer: String, fd: i32)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let mut stop = std::pin::pin!(server.stop_notified());
    let mut armed = false;
    let first = Session::new(&server, peer.clone(), fd);
    let _leave = Leave(&server, first.id);
    let client = Arc::clone(&first.client);
    let mut session = Some(first);
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut output = BytesMut::with_capacity(READ_CHUNK);
    let mut batch = Batch::default();
    let limit = server.settings.max_request_size;
    // The published messages for this client, once it subscribed.
    let mut inbox: Option<Inbox> = None;
    log::debug!("client {peer} connected");
    loop {
        let buffered = input.len();
        let fatal = batch.fill(&mut input, MAX_BATCH, limit).err();
        let full = batch.len() == MAX_BATCH;
        if !batch.is_empty() {
            // Killed while its input came: nothing more is run for it.
            if client.killed() {
                let _ = stream.shutdown().await;
                return;
            }
            let Some(mut current) = session.take() else { return };
            let need = execution::need(&server, &current, &batch, buffered - input.len());
            let in_place = match need {
                Need::Nothing => Some(None),
                Need::Short => server.gate.try_short().map(Some),
                Need::Long | Need::Waits => None,
            };
            if let Some(_short) = in_place {
                run_batch(&server, &mut current, &batch, &mut output);
            } else {
                let shared = Arc::clone(&server);
                let mut out = std::mem::take(&mut output);
                let ran = std::mem::take(&mut batch);
                let ran = tokio::task::spawn_blocking(move || {
                    let _long = (need != Need::Waits).then(|| shared.gate.long());
                    run_batch(&shared, &mut current, &ran, &mut out);
                    (current, out, ran)
                })
                .await;
                match ran {
                    Ok((back, out, ran)) => (current, output, batch) = (back, out, ran),
                    Err(e) => {
                        log::error!(
                            "client {peer}: a command failed unexpectedly: {e}; closing the connection"
                        );
                        return;
                    }
                }
            }
            // The requests' words share the input buffer: once they are
            // gone, the next read reuses it instead of allocating anew.
            batch.clear();
            let after = current.after;
            let feed = current.feed.take();
            client.touch();
            client.db.store(current.db, std::sync::atomic::Ordering::Relaxed);
            client.multi.store(current.multi.is_some(), std::sync::atomic::Ordering::Relaxed);
            client.resp.store(usize::from(current.protocol), std::sync::atomic::Ordering::Relaxed);
            if let Some(new) = current.inbox.take() {
                inbox = Some(new);
            }
            session = Some(current);
            if let Some(plan) = feed {
                client.replica.store(true, std::sync::atomic::Ordering::Relaxed);
                if write(&server, &mut stream, &mut output).await {
                    super::replication::feed(Arc::clone(&server), stream, peer, plan, &client).await;
                }
                return;
            }
            if !write(&server, &mut stream, &mut output).await || after != After::Continue || client.killed()
            {
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
        if server.stopping() {
            return;
        }
        if full {
            continue;
        }
        input.reserve(READ_CHUNK.max(input.len()));
        tokio::select! {
            // Input first: the shutdown check is a flag's load after the
            // first wait, and no random draw decides the order.
            biased;
            read = stream.read_buf(&mut input) => match read {
                Ok(0) | Err(_) => {
                    log::debug!("client {peer} left");
                    return;
                }
                Ok(n) => server.stats.add_input(n),
            },
            () = std::future::poll_fn(|cx| server.poll_stop(cx, stop.as_mut(), &mut armed)) => return,
            () = client.kill_requested() => {
                log::debug!("client {peer}: killed by CLIENT KILL");
                let _ = stream.shutdown().await;
                return;
            },
            message = next_message(&mut inbox) => {
                if message.is_none() {
                    inbox = None;
                    continue;
                }
                let Some(inbox) = inbox.as_mut().filter(|i| !i.overflowed()) else {
                    log::warn!("client {peer}: subscriber too far behind (over {} MiB of messages unread); closing the connection", crate::pubsub::MAX_PENDING_BYTES >> 20);
                    return;
                };
                let protocol = session.as_ref().map_or(2, |s| s.protocol);
                let mut next = message;
                let mut count = 0;
                while let Some(message) = next {
                    message.into_reply().encode(protocol, &mut output);
                    count += 1;
                    next = if count < MAX_BATCH { inbox.try_recv() } else { None };
                }
                if !write(&server, &mut stream, &mut output).await {
                    return;
                }
            },
        }
    }
}

/// The next message for a subscribed client; never, for one that is not.
async fn next_message(inbox: &mut Option<Inbox>) -> Option<Message> {
    match inbox {
        Some(inbox) => inbox.recv().await,
        None => std::future::pending().await,
    }
}

/// Drops a client's subscriptions and its entry among the clients when its
/// connection ends, however it ends.
struct Leave<'a>(&'a Server, u64);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.pubsub.leave(self.1);
        self.0.clients.remove(self.1);
    }
}

/// Writes and empties `output`; false if the client is gone.
async fn write<S: AsyncWrite + Unpin>(server: &Server, stream: &mut S, output: &mut BytesMut) -> bool {
    if output.is_empty() {
        return true;
    }
    let ok = stream.write_all(output).await.is_ok() && stream.flush().await.is_ok();
    server.stats.add_output(output.len());
    output.clear();
    ok
}

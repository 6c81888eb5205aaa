//! The replica's side of a link: one task per database connects to the
//! master, asks for the log from the database's position (or a full
//! resync), and hands what arrives to the applier in batches; when the
//! link fails it reconnects with a back-off, and when REPLICAOF names
//! another master or none it drops the link at once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::apply::{apply_batch, save, Applied};
use super::connect;
use super::frames::{self, Frame};
use super::position::{self, Position};
use super::Target;
use crate::reply::Reply;
use crate::state::Server;

/// The first wait before reconnecting; it doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// A link up this long starts its next back-off from the least again.
const STABLE: Duration = Duration::from_secs(10);
/// How long a connection to the master may take (with its TLS handshake
/// and AUTH).
const CONNECT: Duration = Duration::from_secs(5);
/// How long the master may be silent (it pings every 500 ms) before the
/// link is taken for dead.
const SILENCE: Duration = Duration::from_secs(5);
/// The most frames applied in one batch.
const BATCH_FRAMES: usize = 4096;

/// One database's link to its master: the applier's state, and what INFO shows.
pub struct Link {
    /// Where the position is saved (`None`: an on-memory database).
    pub state_path: Option<PathBuf>,
    /// Held while a batch is applied.
    pub applied: Mutex<Applied>,
    status: Mutex<LinkStatus>,
}

/// What INFO shows of a link.
#[derive(Clone, Debug)]
pub struct LinkStatus {
    /// `none` (not a replica), `connect`, `sync` (a full resync), `up`, `down`.
    pub state: &'static str,
    /// Why the link last failed.
    pub error: Option<String>,
    /// The timestamp of the last entry applied.
    pub applied: u64,
    /// The master's newest timestamp, as last heard.
    pub master_newest: u64,
    /// When the master was last heard from.
    pub last_io: Option<Instant>,
    /// Full resyncs since the server started.
    pub full_resyncs: u64,
    /// How the last link began: `none`, `continue` or `full`.
    pub last_sync: &'static str,
    /// Every entry of the master's log of this time (milliseconds) or
    /// earlier is applied: what the replica acknowledges, and its offset.
    pub through: u64,
    /// Since when the link has not been up (from the start of following),
    /// `None` while it is up.
    pub down_since: Option<Instant>,
}

impl Link {
    /// The link of a database whose state file is at `db_path`'s side.
    pub fn new(db_path: Option<PathBuf>) -> Link {
        let state_path = db_path.map(|p| position::state_path(&p));
        let position = match state_path.as_deref().map(position::load) {
            Some(Ok(position)) => position,
            Some(Err(e)) => {
                log::error!("{e}; the database will be resynced fully");
                None
            }
            None => None,
        };
        let applied = position.as_ref().map_or(0, |p| p.timestamp);
        Link {
            state_path,
            applied: Mutex::new(Applied {
                position,
                dirty: false,
                saved_at: Instant::now(),
                units: Default::default(),
            }),
            status: Mutex::new(LinkStatus {
                state: "none",
                error: None,
                applied,
                master_newest: applied,
                last_io: None,
                full_resyncs: 0,
                last_sync: "none",
                through: 0,
                down_since: None,
            }),
        }
    }

    /// Forgets the position, in memory and on disk.
    pub fn forget(&self) {
        let mut applied = self.applied.lock();
        applied.position = None;
        applied.dirty = false;
        if let Some(path) = &self.state_path {
            position::forget(path);
        }
    }

    /// Changes the status.
    pub fn status(&self, change: impl FnOnce(&mut LinkStatus)) {
        change(&mut self.status.lock());
    }

    /// A copy of the status.
    pub fn snapshot(&self) -> LinkStatus {
        self.status.lock().clone()
    }
}

/// Starts one follower task per database; each idles while the server is
/// no replica. Call within the server's runtime.
pub fn spawn_followers(server: &Arc<Server>) {
    for db in 0..server.databases.len() {
        tokio::spawn(follow(Arc::clone(server), db));
    }
}

async fn follow(server: Arc<Server>, db: usize) {
    let mut targets = server.replication.target.subscribe();
    let mut shutdown = server.shutdown_signal();
    let link = &server.replication.links[db];
    let mut backoff = MIN_BACKOFF;
    loop {
        if *shutdown.borrow() {
            return;
        }
        let target = targets.borrow_and_update().clone();
        let Some(target) = target else {
            link.status(|s| {
                s.state = "none";
                s.down_since = None;
            });
            tokio::select! {
                changed = targets.changed() => if changed.is_err() { return },
                _ = shutdown.changed() => return,
            }
            continue;
        };
        let began = Instant::now();
        let outcome = tokio::select! {
            outcome = session(&server, db, &target) => Some(outcome),
            changed = targets.changed() => if changed.is_err() { return } else { None },
            _ = shutdown.changed() => None,
        };
        settle(&server, db).await;
        let Some(outcome) = outcome else {
            backoff = MIN_BACKOFF;
            continue;
        };
        let why = outcome.err().unwrap_or_else(|| "the link ended".to_string());
        log::warn!("database {db}: replication link to {target} down: {why}; retrying in {backoff:?}");
        link.status(|s| {
            s.state = "down";
            s.error = Some(why);
        });
        if began.elapsed() >= STABLE {
            backoff = MIN_BACKOFF;
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            changed = targets.changed() => if changed.is_err() { return },
            _ = shutdown.changed() => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Waits for a batch still being applied, then saves the position.
async fn settle(server: &Arc<Server>, db: usize) {
    let server = Arc::clone(server);
    let _ = tokio::task::spawn_blocking(move || {
        let link = &server.replication.links[db];
        save(link, &**server.databases[db].db.load(), &mut link.applied.lock());
    })
    .await;
}

/// One connection to the master: ends with an error, never by itself.
async fn session(server: &Arc<Server>, db: usize, target: &Target) -> Result<(), String> {
    let link = &server.replication.links[db];
    link.status(|s| {
        s.state = "connect";
        s.down_since.get_or_insert_with(Instant::now);
    });
    let mut input = BytesMut::with_capacity(64 * 1024);
    let security = &server.replication.security;
    let mut stream = match tokio::time::timeout(CONNECT, connect::open(target, security, &mut input)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err(format!("connecting: no answer in {CONNECT:?}")),
    };
    let position = {
        let server = Arc::clone(server);
        // Through the applier's lock: a batch of the last link may still run.
        tokio::task::spawn_blocking(move || server.replication.links[db].applied.lock().position.clone())
            .await
            .map_err(|e| e.to_string())?
    };
    let master = target.to_string();
    let mut request = vec![Reply::bulk("REPLSYNC"), Reply::bulk(db.to_string())];
    match position {
        Some(Position { master: m, timestamp, skip }) if m == master => {
            request.push(Reply::bulk(timestamp.to_string()));
            request.push(Reply::bulk(skip.to_string()));
        }
        _ => request.push(Reply::Bulk(Bytes::from_static(b"FULL"))),
    }
    let mut out = BytesMut::new();
    let port = server.settings.port;
    if port != 0 {
        // The master lists its replicas by the address clients reach them
        // at (what Sentinel connects to), as Redis's replicas tell theirs.
        let words = ["REPLCONF", "listening-port", &port.to_string()].map(|w| Reply::bulk(w.to_string()));
        Reply::Array(words.to_vec()).encode(2, &mut out);
    }
    Reply::Array(request).encode(2, &mut out);
    // Flushed: over TLS a write may stay in the session's buffer.
    let sent = async { stream.write_all(&out).await.and(stream.flush().await) };
    sent.await.map_err(|e| format!("sending REPLSYNC: {e}"))?;
    let mut greeted = false;
    let mut acked = 0;
    loop {
        let mut batch = Vec::new();
        while batch.len() < BATCH_FRAMES {
            match frames::next(&mut input)? {
                Some(Frame::Ok) => {}
                Some(frame) => batch.push(frame),
                None => break,
            }
        }
        if !batch.is_empty() {
            if !greeted {
                match &batch[0] {
                    Frame::Continue | Frame::FullResync(_) => {}
                    Frame::Error(text) if text.starts_with("NOAUTH") => {
                        return Err(format!("the master requires a password: give --masterauth ({text})"))
                    }
                    Frame::Error(_) => {}
                    other => return Err(format!("the master did not answer REPLSYNC: {other:?}")),
                }
                greeted = true;
            }
            link.status(|s| s.last_io = Some(Instant::now()));
            let server = Arc::clone(server);
            let master = master.clone();
            tokio::task::spawn_blocking(move || apply_batch(&server, db, &master, batch))
                .await
                .map_err(|e| e.to_string())??;
            let through = link.snapshot().through;
            if through > acked {
                let mut out = BytesMut::new();
                frames::ack(through).encode(2, &mut out);
                let sent = async { stream.write_all(&out).await.and(stream.flush().await) };
                sent.await.map_err(|e| format!("acknowledging: {e}"))?;
                acked = through;
            }
            continue;
        }
        input.reserve(64 * 1024);
        match tokio::time::timeout(SILENCE, stream.read_buf(&mut input)).await {
            Ok(Ok(0)) => return Err("the master closed the link".to_string()),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("reading: {e}")),
            Err(_) => return Err(format!("the master was silent for {SILENCE:?}")),
        }
    }
}

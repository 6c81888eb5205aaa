//! Replication from the update logs: a server started with `--ulog DIR`
//! logs every change of database N into `DIR/dbN.*` (the reference's queue
//! files) and feeds that log to replicas; `REPLICAOF host port` or
//! `--replicaof host:port` makes a server a read-only replica that follows
//! each of its databases from the master's database of the same number.
//!
//! One file per concept: `logs` (opening the databases' logs), `position`
//! (where a replica is, and its state file), `frames` (what travels on the
//! link), `plan` (a master's answer to REPLSYNC: go on, or a full resync),
//! `feed` (the master's side of a link), `connect` (how a replica reaches
//! a master: TLS, AUTH), `follow` and `apply` (the replica's side),
//! `commands` (REPLICAOF, REPLSYNC) and `info` (INFO replication). docs/serve.md, "Replication", is the user's guide.

mod apply;
pub mod commands;
mod connect;
mod feed;
mod follow;
mod frames;
pub mod info;
mod logs;
mod plan;
mod position;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use kuradb::ulog::MessageQueue;
use kuradb::{Error, ErrorKind, Result};
use parking_lot::{Condvar, Mutex};
use tokio::sync::watch;

pub use connect::{LinkSecurity, LinkTls};
pub use feed::{feed, FeedPlan};
pub use follow::spawn_followers;
pub use logs::attach_logs;

use follow::Link;

/// The master a replica follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Its host name or address.
    pub host: String,
    /// Its port.
    pub port: u16,
}

impl Target {
    /// Parses `HOST:PORT` (the last colon splits, so `[::1]:6380` works).
    pub fn parse(text: &str) -> Result<Target> {
        let bad = || Error::new(ErrorKind::InvalidArgument, format!("--replicaof {text:?} is not HOST:PORT"));
        let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port: u16 = port.parse().map_err(|_| bad())?;
        if host.is_empty() || port == 0 {
            return Err(bad());
        }
        Ok(Target { host: host.to_string(), port })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// What a master knows of one replica it feeds, for INFO.
#[derive(Clone, Debug)]
pub struct FeedState {
    /// The replica's address.
    pub peer: String,
    /// The database fed.
    pub db: usize,
    /// `snapshot` during a full resync, then `online`.
    pub state: &'static str,
    /// The timestamp of the last entry sent.
    pub sent: u64,
    /// The port the replica serves clients on, if it said (REPLCONF
    /// listening-port): with the peer's address, the replica's identity.
    pub listening_port: Option<u16>,
    /// The time up to which the replica acknowledged every entry (see `Frame::Ping`).
    pub through: u64,
    /// When it last acknowledged.
    pub last_ack: Option<std::time::Instant>,
}

impl FeedState {
    /// The replica as clients reach it: the peer's address with its
    /// listening port (the connection's own port if it gave none).
    pub fn replica(&self) -> (String, u16) {
        let (ip, port) = self.peer.rsplit_once(':').unwrap_or((self.peer.as_str(), "0"));
        let ip = ip.trim_start_matches('[').trim_end_matches(']').to_string();
        (ip, self.listening_port.unwrap_or_else(|| port.parse().unwrap_or(0)))
    }
}

/// One replica server, with every database it is fed.
#[derive(Clone, Debug)]
pub struct ReplicaView {
    /// Its address as clients reach it.
    pub ip: String,
    /// Its listening port.
    pub port: u16,
    /// `online` once every feed of it is past its snapshot, else `wait_bgsave`.
    pub state: &'static str,
    /// The least acknowledged time over its feeds: its offset.
    pub offset: u64,
    /// Seconds since its oldest last acknowledgement.
    pub lag: u64,
    /// The feeds, with their database numbers.
    pub feeds: Vec<FeedState>,
}

/// The replication state of a server, master or replica.
pub struct Replication {
    /// Each database's update log (`--ulog`), by database number.
    logs: Vec<Option<Arc<MessageQueue>>>,
    /// The master followed; `None` for a master.
    target: watch::Sender<Option<Target>>,
    /// Whether the server is a replica now (read on every write command).
    replica: AtomicBool,
    /// Each database's link to its master, by database number.
    links: Vec<Link>,
    /// The replicas fed now, by feed id.
    feeds: Mutex<BTreeMap<u64, FeedState>>,
    /// Woken whenever a replica acknowledges (WAIT waits on it with `feeds`).
    acked: Condvar,
    next_feed: AtomicU64,
    /// Full resyncs this server served as a master.
    full_resyncs_served: AtomicU64,
    /// How this server, as a replica, reaches its master (TLS, AUTH).
    security: LinkSecurity,
}

impl Replication {
    /// The state of a server whose databases log into `logs` (one entry per
    /// database, `None` without `--ulog`), a replica of `target` if given;
    /// `state_paths` are where each database's replica state file goes
    /// beside (each database's path; `None` for an on-memory database).
    pub fn new(
        logs: Vec<Option<Arc<MessageQueue>>>,
        state_paths: Vec<Option<PathBuf>>,
        target: Option<Target>,
    ) -> Replication {
        let replica = target.is_some();
        if !replica {
            for path in state_paths.iter().flatten() {
                position::forget(&position::state_path(path));
            }
        }
        Replication {
            logs,
            target: watch::channel(target).0,
            replica: AtomicBool::new(replica),
            links: state_paths.into_iter().map(Link::new).collect(),
            feeds: Mutex::new(BTreeMap::new()),
            acked: Condvar::new(),
            next_feed: AtomicU64::new(1),
            full_resyncs_served: AtomicU64::new(0),
            security: LinkSecurity::default(),
        }
    }

    /// The state with `security` for the links to any master followed
    /// (`--masterauth`, `--replica_tls…`; REPLICAOF uses them too).
    pub fn with_security(self, security: LinkSecurity) -> Replication {
        Replication { security, ..self }
    }

    /// Whether the server is a replica, so clients may not write.
    pub fn is_replica(&self) -> bool {
        self.replica.load(Relaxed)
    }

    /// The master followed, if any.
    pub fn target(&self) -> Option<Target> {
        self.target.borrow().clone()
    }

    /// Follows `target` from now on, or with `None` stops following and
    /// becomes a master (each database's position is forgotten, so that a
    /// later REPLICAOF starts with a full resync: clients may write to a
    /// master, and the old position would no longer describe its data).
    pub fn set_target(&self, target: Option<Target>) {
        let promoted = target.is_none();
        self.replica.store(!promoted, Relaxed);
        self.target.send_if_modified(|current| {
            let changed = *current != target;
            *current = target;
            changed
        });
        // After the followers are told, so no batch of theirs lands after.
        if promoted {
            for link in &self.links {
                link.forget();
            }
        }
    }

    /// Database `db`'s update log, if it keeps one.
    pub fn log(&self, db: usize) -> Option<&Arc<MessageQueue>> {
        self.logs.get(db).and_then(Option::as_ref)
    }

    /// The replica servers fed now, each once whatever the number of its
    /// databases, ordered by address.
    pub fn replicas(&self) -> Vec<ReplicaView> {
        replicas_of(self.feeds.lock().values())
    }

    /// This server's replication offset: on a master the time (milliseconds
    /// since the epoch) up to which its log holds every change, which is
    /// now; on a replica the time up to which it applied every entry of its
    /// master's log, over all its databases. The one number Sentinel and
    /// WAIT compare (docs/serve.md, "Sentinel").
    pub fn offset(&self) -> u64 {
        if self.is_replica() {
            self.links.iter().map(|l| l.snapshot().through).min().unwrap_or(0)
        } else {
            kuradb::ulog::now_ms().saturating_sub(1)
        }
    }

    /// How many replica servers have acknowledged, for each `(db, time)` of
    /// `marks`, every entry of that database up to that time; waits until
    /// `wanted` have or `deadline` passes (`None`: no limit) or `stop` says.
    pub fn wait_acks(
        &self,
        marks: &[(usize, u64)],
        wanted: usize,
        deadline: Option<std::time::Instant>,
        stop: impl Fn() -> bool,
    ) -> usize {
        let mut feeds = self.feeds.lock();
        loop {
            let done = replicas_of(feeds.values())
                .iter()
                .filter(|r| {
                    marks.iter().all(|&(db, time)| r.feeds.iter().any(|f| f.db == db && f.through >= time))
                })
                .count();
            let now = std::time::Instant::now();
            if done >= wanted || deadline.is_some_and(|d| d <= now) || stop() {
                return done;
            }
            // Bounded, so that a shutdown is seen.
            let slice = std::time::Duration::from_millis(100);
            let until = deadline.map_or(now + slice, |d| d.min(now + slice));
            self.acked.wait_until(&mut feeds, until);
        }
    }

    fn add_feed(&self, state: FeedState) -> u64 {
        let id = self.next_feed.fetch_add(1, Relaxed);
        self.feeds.lock().insert(id, state);
        id
    }
}

/// The feeds grouped by replica server.
fn replicas_of<'a>(feeds: impl Iterator<Item = &'a FeedState>) -> Vec<ReplicaView> {
    let mut by_replica: BTreeMap<(String, u16), Vec<FeedState>> = BTreeMap::new();
    for feed in feeds {
        by_replica.entry(feed.replica()).or_default().push(feed.clone());
    }
    by_replica
        .into_iter()
        .map(|((ip, port), feeds)| ReplicaView {
            ip,
            port,
            state: if feeds.iter().all(|f| f.state == "online") { "online" } else { "wait_bgsave" },
            offset: feeds.iter().map(|f| f.through).min().unwrap_or(0),
            lag: feeds.iter().map(|f| f.last_ack.map_or(0, |t| t.elapsed().as_secs())).max().unwrap_or(0),
            feeds,
        })
        .collect()
}

impl Default for Replication {
    /// A master keeping no logs, of no database (tests of other parts).
    fn default() -> Replication {
        Replication::new(Vec::new(), Vec::new(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_host_and_port() {
        let t = Target::parse("127.0.0.1:6380").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 6380));
        assert_eq!(Target::parse("[::1]:7000").unwrap().to_string(), "[::1]:7000");
        for bad in ["localhost", ":6380", "h:0", "h:x", "h:70000"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }
}

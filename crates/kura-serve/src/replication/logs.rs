//! Opening the databases' update logs for `--ulog DIR`: database N logs
//! into the queue files `DIR/dbN.0000000000`, … (the reference's format,
//! entries marked with server id 0 and database index N), through a queue
//! the server keeps, so that its feeds are woken by each write and know
//! the newest timestamp.

use std::path::Path;
use std::sync::Arc;

use kuradb::dbm::poly::PolyDbm;
use kuradb::ulog::{MessageQueue, MqUpdateLogger};
use kuradb::{Error, ErrorKind, Result};

use crate::databases::{self, parse_spec, Database, Served};

/// The databases and each one's update log.
pub type Logged = (Vec<Database<PolyDbm>>, Vec<Option<Arc<MessageQueue>>>);

/// Makes every database of `databases` log into `dir` (created if
/// missing), in files of at most `max_file_size` bytes, and answers them
/// with their queues; without `dir`, none logs. A shard set, and a
/// database whose spec gives its own `ulog_prefix`, are refused with
/// `dir`. On an error, every database is closed.
pub fn attach_logs(
    databases: Vec<Database<PolyDbm>>,
    dir: Option<&Path>,
    max_file_size: u64,
) -> Result<Logged> {
    let Some(dir) = dir else {
        let logs = databases.iter().map(|_| None).collect();
        return Ok((databases, logs));
    };
    let mut done = Vec::with_capacity(databases.len());
    let mut logs = Vec::with_capacity(databases.len());
    let own_prefix =
        databases.iter().find(|d| parse_spec(&d.spec).is_ok_and(|(_, p)| p.get("ulog_prefix").is_some()));
    let mut failure = match own_prefix {
        Some(d) => Some(Error::new(
            ErrorKind::InvalidArgument,
            format!("database {:?}: give either --ulog or ulog_prefix, not both", d.spec),
        )),
        None => std::fs::create_dir_all(dir)
            .map_err(|e| Error::io("creating the update log directory", dir, e))
            .err(),
    };
    let mut rest = databases.into_iter();
    while failure.is_none() {
        let Some(database) = rest.next() else { break };
        match attach(database, dir, done.len(), max_file_size) {
            Ok((database, queue)) => {
                done.push(database);
                logs.push(Some(queue));
            }
            Err(e) => failure = Some(e),
        }
    }
    match failure {
        None => Ok((done, logs)),
        Some(e) => {
            done.extend(rest);
            let _ = databases::close_all(done);
            Err(e)
        }
    }
}

fn attach(
    database: Database<PolyDbm>,
    dir: &Path,
    index: usize,
    max_file_size: u64,
) -> Result<(Database<PolyDbm>, Arc<MessageQueue>)> {
    let spec = database.spec.clone();
    let refuse = |why: &str| Error::new(ErrorKind::InvalidArgument, format!("database {spec:?}: {why}"));
    let Database { db, spec: _, ordered, order, fast, published, expiry } = database;
    // Just opened, and kept as stored (a database with expiry without its
    // layer, see `databases::open`): nothing else holds it yet.
    let db = match Arc::try_unwrap(db.into_inner()) {
        Ok(PolyDbm::One(db)) => db,
        Ok(PolyDbm::Expiring(layered)) => {
            let _ = PolyDbm::Expiring(layered).close();
            return Err(refuse("opened under its expiry layer: the server logs the stored values"));
        }
        Ok(shards) => {
            let _ = shards.close();
            return Err(refuse("a shard set cannot log for replication yet: serve one file per database"));
        }
        Err(_) => return Err(refuse("in use while its log was being attached")),
    };
    let queue = match MessageQueue::open(dir.join(format!("db{index}")), max_file_size) {
        Ok(queue) => Arc::new(queue),
        Err(e) => {
            let _ = db.close();
            return Err(e);
        }
    };
    let logger = Arc::new(MqUpdateLogger::new(Arc::clone(&queue), 0, index as u32));
    let db = Served::Fixed(Arc::new(PolyDbm::One(db.with_update_logger(logger))));
    Ok((Database { db, spec, ordered, order, fast, published, expiry }, queue))
}

//! Publishes versions of `key:NNNNNNNNNNNN` records (redis-benchmark's
//! `key:__rand_int__` keys with `-r`) into a published directory, for
//! `scripts/bench-swap`.
//!
//! `publish_versions DIR KEYS SHARDS first` publishes one version now.
//! `publish_versions DIR KEYS SHARDS series N` stages N versions, prints
//! `staged`, waits for a line on stdin, then commits one version for each
//! further line it reads, printing `v-V` once committed: the writing of
//! the records is done before the measured run, the commits (linking the
//! files in, their checksums, the switch of `CURRENT`) during it.

use std::io::BufRead;
use std::path::Path;

use kuradb::dbm::poly::Params;
use kuradb::dbm::published::{CommitOptions, PublishJob};
use kuradb::dbm::shard::shard_of;
use kuradb::dbm::Dbm;
use kuradb::{Error, ErrorKind, Result};

fn stage(dir: &Path, job_id: &str, keys: u64, shards: usize) -> Result<PublishJob> {
    // Twice as many buckets as each shard's records.
    let buckets = 2 * keys / shards as u64 + 1;
    let job =
        PublishJob::new(dir, job_id, shards, &Params::parse(&format!("dbm=hash,num_buckets={buckets}"))?)?;
    let staged: Vec<_> = (0..shards).map(|shard| job.stage(shard, "0")).collect::<Result<_>>()?;
    for i in 0..keys {
        let key = format!("key:{i:012}");
        let shard = shard_of(key.as_bytes(), shards)?;
        staged[shard].set(key.as_bytes(), format!("{job_id}-{i}").as_bytes())?;
    }
    for db in staged {
        db.close()?;
    }
    Ok(job)
}

fn commit(job: &PublishJob) -> Result<u64> {
    let attempts: Vec<(usize, &str)> = (0..job.num_shards()).map(|s| (s, "0")).collect();
    job.commit(&attempts, &CommitOptions::default())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        || Error::new(ErrorKind::InvalidArgument, "usage: publish_versions DIR KEYS SHARDS first|series N");
    let [dir, keys, shards, mode, rest @ ..] = &args[..] else { return Err(usage()) };
    let dir = Path::new(dir);
    let keys: u64 = keys.parse().map_err(|_| usage())?;
    let shards: usize = shards.parse().map_err(|_| usage())?;
    let tag = std::process::id();
    match (mode.as_str(), rest) {
        ("first", []) => {
            let version = commit(&stage(dir, &format!("first-{tag}"), keys, shards)?)?;
            println!("v-{version}");
        }
        ("series", [n]) => {
            let n: usize = n.parse().map_err(|_| usage())?;
            let jobs: Vec<PublishJob> = (0..n)
                .map(|i| stage(dir, &format!("series-{tag}-{i}"), keys, shards))
                .collect::<Result<_>>()?;
            println!("staged");
            let mut lines = std::io::stdin().lock().lines();
            let _ = lines.next();
            for job in &jobs {
                if lines.next().is_none() {
                    break;
                }
                println!("v-{}", commit(job)?);
            }
        }
        _ => return Err(usage()),
    }
    Ok(())
}

//! INFO's `replication` section, with Redis's field names and formats where
//! Redis has the field (`role`, `connected_slaves`, `slaveN`,
//! `master_repl_offset`, `master_host`, `slave_repl_offset`, …: what
//! Sentinel and redis-cli read) and ours for what is per database
//! (`db0_link`, `db0_log`, `feedN`).

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

use crate::state::Server;

/// Appends the section's lines.
pub fn section(server: &Server, out: &mut String) {
    let replication = &server.replication;
    let offset = replication.offset();
    match replication.target() {
        None => {
            let _ = write!(out, "role:master\r\n");
        }
        Some(target) => {
            let links: Vec<_> = replication.links.iter().map(|l| l.snapshot()).collect();
            let all_up = links.iter().all(|l| l.state == "up");
            let syncing = links.iter().any(|l| l.state == "sync");
            let last_io = links.iter().filter_map(|l| l.last_io).map(|t| t.elapsed().as_secs()).max();
            let lag = links.iter().map(|l| l.master_newest.saturating_sub(l.applied)).max().unwrap_or(0);
            let _ = write!(
                out,
                "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\n\
                 master_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\nslave_read_repl_offset:{offset}\r\n\
                 slave_repl_offset:{offset}\r\n",
                target.host,
                target.port,
                if all_up { "up" } else { "down" },
                last_io.map_or(-1, |s| s as i64),
                u8::from(syncing),
            );
            if !all_up {
                let down = links.iter().filter_map(|l| l.down_since).map(|t| t.elapsed().as_secs()).max();
                let _ = write!(out, "master_link_down_since_seconds:{}\r\n", down.map_or(-1, |s| s as i64));
            }
            let _ = write!(
                out,
                "slave_priority:{}\r\nslave_read_only:1\r\nreplica_announced:1\r\nslave_lag_ms:{lag}\r\n",
                server.replica_priority.load(Relaxed)
            );
            for (db, link) in links.iter().enumerate() {
                let _ = write!(
                    out,
                    "db{db}_link:status={},applied_timestamp={},master_timestamp={},lag_ms={},last_sync={},\
                     full_resyncs={}",
                    link.state,
                    link.applied,
                    link.master_newest,
                    link.master_newest.saturating_sub(link.applied),
                    link.last_sync,
                    link.full_resyncs,
                );
                if let Some(error) = &link.error {
                    let _ = write!(out, ",error={}", error.replace(['\r', '\n', ','], " "));
                }
                out.push_str("\r\n");
            }
        }
    }
    let replicas = replication.replicas();
    let _ = write!(out, "connected_slaves:{}\r\n", replicas.len());
    for (i, r) in replicas.iter().enumerate() {
        let _ = write!(
            out,
            "slave{i}:ip={},port={},state={},offset={},lag={}\r\n",
            r.ip, r.port, r.state, r.offset, r.lag
        );
    }
    let _ = write!(
        out,
        "master_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_repl_offset:{offset}\r\n",
        server.run_id
    );
    let feeds = replicas.iter().flat_map(|r| r.feeds.iter().map(move |f| (r, f)));
    for (i, (r, feed)) in feeds.enumerate() {
        let newest = replication.log(feed.db).map_or(0, |q| q.timestamp());
        let _ = write!(
            out,
            "feed{i}:replica={}:{},db={},state={},sent_timestamp={},lag_ms={},acked={}\r\n",
            r.ip,
            r.port,
            feed.db,
            feed.state,
            feed.sent,
            newest.saturating_sub(feed.sent),
            feed.through,
        );
    }
    for db in 0..server.databases.len() {
        if let Some(queue) = replication.log(db) {
            let _ = write!(
                out,
                "db{db}_log:prefix={},newest_timestamp={}\r\n",
                queue.prefix().display(),
                queue.timestamp()
            );
        }
    }
    let _ = write!(out, "full_resyncs_served:{}\r\n", replication.full_resyncs_served.load(Relaxed));
}

//! INFO's text: the sections `server`, `clients`, `persistence`, `stats`,
//! `replication`, `published` (when a published directory is served),
//! `commandstats` (calls, time and failures per command) and `keyspace`,
//! in Redis's `field:value` lines.

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

use super::commands::COMMANDS;
use super::commands::REDIS_VERSION;
use super::state::Server;

/// The sections shown by default (`commandstats` only when asked, or with
/// `all`/`everything`, as in Redis).
const DEFAULT: &[&str] =
    &["server", "clients", "persistence", "stats", "replication", "published", "keyspace"];

/// Appends one section's lines.
type SectionWriter = fn(&Server, &mut String);

/// The text INFO answers for `sections` (none: the default ones).
pub fn text(server: &Server, sections: &[String]) -> String {
    let all = sections.iter().any(|s| s == "all" || s == "everything");
    let wanted = |name: &str| {
        all || sections.iter().any(|s| s == name)
            || (sections.is_empty() || sections.iter().any(|s| s == "default")) && DEFAULT.contains(&name)
    };
    let mut out = String::new();
    let writers: [(&str, SectionWriter); 8] = [
        ("server", server_section),
        ("clients", clients),
        ("persistence", persistence),
        ("stats", stats),
        ("replication", super::replication::info::section),
        ("published", super::published::info_section),
        ("commandstats", commandstats),
        ("keyspace", keyspace),
    ];
    for (name, write) in writers {
        if wanted(name) && (name != "published" || server.databases.iter().any(|d| d.published.is_some())) {
            if !out.is_empty() {
                out.push_str("\r\n");
            }
            let mut title = name.to_string();
            title[..1].make_ascii_uppercase();
            let _ = write!(out, "# {title}\r\n");
            write(server, &mut out);
        }
    }
    out
}

fn server_section(server: &Server, out: &mut String) {
    let uptime = server.started.elapsed().as_secs();
    let _ = write!(
        out,
        "redis_version:{REDIS_VERSION}\r\nkura_version:{}\r\nredis_mode:standalone\r\nos:{} {}\r\narch_bits:{}\r\n\
         process_id:{}\r\nrun_id:{}\r\ntcp_address:{}\r\ntcp_port:{}\r\ntls:{}\r\nuptime_in_seconds:{uptime}\r\n\
         uptime_in_days:{}\r\n",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH,
        usize::BITS,
        std::process::id(),
        server.run_id,
        server.settings.address,
        server.settings.port,
        if server.settings.tls { "yes" } else { "no" },
        uptime / 86400,
    );
}

fn clients(server: &Server, out: &mut String) {
    let _ = write!(
        out,
        "connected_clients:{}\r\nmaxclients:{}\r\n",
        server.connected.load(Relaxed),
        server.settings.max_clients
    );
}

fn persistence(server: &Server, out: &mut String) {
    let saves = &server.saves;
    let running = saves.background.lock().as_ref().is_some_and(|h| !h.is_finished());
    let _ = write!(
        out,
        "rdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\n",
        u8::from(running),
        saves.last.load(Relaxed),
        if saves.ok.load(Relaxed) { "ok" } else { "err" },
    );
}

fn stats(server: &Server, out: &mut String) {
    let s = &server.stats;
    let _ = write!(
        out,
        "total_connections_received:{}\r\ntotal_commands_processed:{}\r\nrejected_connections:{}\r\n\
         total_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\ntotal_error_replies:{}\r\n\
         unknown_commands:{}\r\nprotocol_errors:{}\r\n",
        s.connections_received.load(Relaxed),
        s.total_commands(),
        s.rejected_connections.load(Relaxed),
        s.input_bytes(),
        s.output_bytes(),
        s.total_failed(),
        s.unknown_commands.load(Relaxed),
        s.protocol_errors.load(Relaxed),
    );
}

fn commandstats(server: &Server, out: &mut String) {
    for (index, command) in COMMANDS.iter().enumerate() {
        let counts = server.stats.command(index);
        let calls = counts.calls;
        if calls == 0 && counts.rejected == 0 {
            continue;
        }
        let usec = counts.usec;
        let _ = write!(
            out,
            "cmdstat_{}:calls={calls},usec={usec},usec_per_call={:.2},rejected_calls={},failed_calls={}\r\n",
            command.name,
            usec as f64 / calls.max(1) as f64,
            counts.rejected,
            counts.failed,
        );
    }
}

/// `keys` is the stored count, expired keys not yet removed included (as
/// Redis's), the expiry layer's marker not; `expires` and `avg_ttl` are the
/// sweeper's estimates (see `crate::expiry`): no walk of the database here.
fn keyspace(server: &Server, out: &mut String) {
    for (i, database) in server.databases.iter().enumerate() {
        match crate::expiry::key_count(&**database.db.load(), database.expiry.state().is_some()) {
            Ok(0) => {}
            Ok(n) => {
                let (expires, avg_ttl) = database.expiry.estimates();
                let _ = write!(out, "db{i}:keys={n},expires={expires},avg_ttl={avg_ttl}\r\n");
            }
            Err(e) => log::warn!("INFO keyspace: counting {}: {e}", database.spec),
        }
    }
}

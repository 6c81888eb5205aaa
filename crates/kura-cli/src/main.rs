//! `kura`: the command-line tool of kuradb, for benchmarks and administration.
//!
//! One subcommand per module; each returns a [`kuradb::Result`], and a failure is
//! printed as `kura: <error>` with exit status 1 (clap's usage errors exit with 2);
//! a reader that closed the pipe ends a command quietly with status 141 (see
//! [`out`]).

#![forbid(unsafe_code)]

mod dbm_options;
mod file_options;
mod file_perf;
mod out;
mod perf;
mod report;
mod ulog;
mod util;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Benchmarks and administration of kuradb databases.
#[derive(Parser, Debug)]
#[command(name = "kura", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Benchmarks and checks the databases (flags of tkrzw_dbm_perf).
    Perf(Box<perf::PerfArgs>),
    /// Benchmarks and checks the file layer (flags of tkrzw_file_perf).
    FilePerf(file_perf::FilePerfArgs),
    /// Administers a database file: create, inspect, get, set, list, export, import, rebuild, ….
    Util(Box<util::UtilArgs>),
    /// Update-log files: write, read, list, prune, apply (tkrzw_ulog_util's subcommands and flags).
    Ulog(ulog::UlogArgs),
    /// Serves databases over the Redis protocol (redis-cli, Redis clients, proxies).
    #[cfg(feature = "serve")]
    Serve(Box<kura_serve::ServeArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    #[cfg(feature = "serve")]
    let serving = matches!(cli.command, Command::Serve(_));
    #[cfg(not(feature = "serve"))]
    let serving = false;
    // `kura serve` sets up its own log (--log_level, --log_file).
    if !serving {
        start_logging();
    }
    let result = match &cli.command {
        Command::Perf(args) => perf::run(args),
        Command::FilePerf(args) => file_perf::run(args),
        Command::Util(args) => util::run(args),
        Command::Ulog(args) => ulog::run(args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => kura_serve::run(args),
    };
    match result.and_then(|()| out::flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => ExitCode::from(out::exit_status(&err)),
    }
}

/// Sends what the library tells an operator (an automatic restore at open,
/// say) to stderr as `kura: LEVEL: message`, from warn up unless `RUST_LOG`
/// says otherwise.
fn start_logging() {
    use std::io::Write;
    let _ = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format(|out, record| {
            writeln!(out, "kura: {}: {}", record.level().as_str().to_lowercase(), record.args())
        })
        .try_init();
}

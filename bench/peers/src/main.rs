//! `kura-peers`: kuradb beside other embedded key-value stores on the same
//! workloads. With no subcommand it makes the comparison table (see
//! `table`); `kura-peers txn` measures committed transactions a second.

mod engine;
mod reference;
mod store;
mod stores;
mod table;
mod txn;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("txn") {
        return txn::main(&args[1..]);
    }
    let config = match table::parse_args(&args) {
        Ok(config) => config,
        Err(message) if message.is_empty() => {
            println!("{}", table::usage());
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("kura-peers: {message}\n{}", table::usage());
            return ExitCode::from(2);
        }
    };
    let result = match config.child {
        Some(store) => table::child(&config, store),
        None => table::run(&args, &config),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kura-peers: {error}");
            ExitCode::FAILURE
        }
    }
}

//! The fuzz targets' bodies, shared by the cargo-fuzz crate (`fuzz/`, which
//! includes this directory by path) and by `tests/fuzz_regressions.rs`, which
//! replays the kept corpus and every crash found through the same code on
//! stable. Each target takes arbitrary bytes; every outcome must be a clear
//! error or a consistent database, and anything else panics here.

pub mod checks;
pub mod fault_model;
pub mod files;
pub mod fixup;
pub mod reference;

/// Every target, by the name of its directory under `fuzz/corpus/`.
pub const TARGETS: [&str; 7] =
    ["hash_file", "tree_file", "skip_file", "flat_file", "shard_set", "fault_model", "reference_file"];

/// Runs the target called `name` on `data`.
pub fn run(name: &str, data: &[u8]) {
    match name {
        "hash_file" => files::hash_file(data),
        "tree_file" => files::tree_file(data),
        "skip_file" => files::skip_file(data),
        "flat_file" => files::flat_file(data),
        "shard_set" => files::shard_set(data),
        "fault_model" => fault_model::run(data),
        "reference_file" => reference::reference_file(data),
        other => panic!("no fuzz target is called {other:?}; the targets are {TARGETS:?}"),
    }
}

//! The time a `record_comp_mode` costs per record: stores N records of the
//! JSON-like or random-byte set of `scripts/bench-compression` (the same
//! shapes, not the same bytes) in a hash file, synchronizes and reopens it,
//! then reads them back in a shuffled order; prints the file size and the
//! nanoseconds per set and per get. Meant for profilers as much as clocks:
//! each phase is one function, `set_all` and `get_all`, so that callgrind's
//! inclusive counts give the instructions of each.
//!
//! `cargo run --release -p kuradb --example compression_speed -- [MODE] [json|random] [N]`
//! (defaults: lz4 json 100000)

use std::time::Instant;

use kuradb::dbm::hash::{HashDbm, HashOptions, RecordCompMode};
use kuradb::dbm::{Access, Dbm, Durability};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

fn json_value(rng: &mut impl Rng, i: usize) -> Vec<u8> {
    let words = ["shipped", "pending", "returned", "tokyo", "osaka", "berlin", "paris", "gold", "silver"];
    let mut s = format!(
        "{{\"id\":{i},\"user\":\"user{}\",\"city\":\"{}\",\"items\":[",
        rng.gen_range(0..50000),
        words[rng.gen_range(0..words.len())]
    );
    let target = rng.gen_range(200..2000);
    while s.len() + 90 < target {
        s += &format!(
            "{{\"sku\":\"SKU-{:06}\",\"price\":{},\"qty\":{},\"status\":\"{}\"}},",
            rng.gen_range(0..1_000_000),
            rng.gen_range(100..100_000),
            rng.gen_range(1..20),
            words[rng.gen_range(0..words.len())]
        );
    }
    s += &format!("],\"note\":\"{} {}\"}}", words[rng.gen_range(0..words.len())], rng.gen_range(0..1000));
    s.into_bytes()
}

fn records(random: bool, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(19);
    (0..n)
        .map(|i| {
            let key = format!("{:012x}-{i}", rng.gen_range(0..1u64 << 40)).into_bytes();
            let value = if random {
                let mut v = vec![0u8; rng.gen_range(200..2000)];
                rng.fill(&mut v[..]);
                v
            } else {
                json_value(&mut rng, i)
            };
            (key, value)
        })
        .collect()
}

#[inline(never)]
fn set_all(db: &HashDbm, data: &[(Vec<u8>, Vec<u8>)]) -> kuradb::Result<()> {
    for (key, value) in data {
        db.set(key, value)?;
    }
    db.synchronize(Durability::Soft)
}

#[inline(never)]
fn get_all(db: &HashDbm, data: &[(Vec<u8>, Vec<u8>)]) -> kuradb::Result<()> {
    for (key, value) in data {
        if db.get(key)?.as_deref() != Some(&value[..]) {
            panic!("a record reads back wrong");
        }
    }
    Ok(())
}

fn main() -> kuradb::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = RecordCompMode::from_name(args.first().map_or("lz4", |s| s))?;
    let random = args.get(1).is_some_and(|s| s == "random");
    let n: usize = args.get(2).map_or(100_000, |s| s.parse().expect("N is a number"));
    let mut data = records(random, n);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("speed.kh");
    let options = HashOptions::default().num_buckets(2 * n as u64).record_comp_mode(mode);
    let db = HashDbm::open(&path, Access::ReadWrite, &options)?;
    let start = Instant::now();
    set_all(&db, &data)?;
    let set = start.elapsed();
    db.close()?;
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    data.shuffle(&mut rand::rngs::SmallRng::seed_from_u64(7));
    let db = HashDbm::open(&path, Access::ReadOnly, &HashOptions::default())?;
    let start = Instant::now();
    get_all(&db, &data)?;
    let get = start.elapsed();
    let per = |d: std::time::Duration| d.as_nanos() as f64 / n as f64;
    println!(
        "{mode} {}: {n} records, file {size} bytes, set {:.0} ns, get {:.0} ns",
        if random { "random" } else { "json" },
        per(set),
        per(get)
    );
    Ok(())
}

//! The compression ratio of each `record_comp_mode` on JSON-like values of
//! 200 to 2000 bytes (docs/compression.md): stored value bytes over given
//! value bytes, for every mode both without a dictionary (a file holding
//! fewer values than a dictionary is trained from) and with one (after a
//! rebuild, which trains it from the records and recompresses every value).
//!
//! `cargo run --release -p kuradb --example compression_ratio`

use kuradb::dbm::hash::{HashDbm, HashOptions, RecordCompMode};
use kuradb::dbm::{Access, Dbm};
use rand::{Rng, SeedableRng};

fn json_value(rng: &mut impl Rng, i: usize) -> Vec<u8> {
    let words = ["shipped", "pending", "returned", "tokyo", "osaka", "berlin"];
    let mut s = format!(
        "{{\"id\":{i},\"user\":\"user{}\",\"city\":\"{}\",\"items\":[",
        rng.gen_range(0..50000),
        words[rng.gen_range(0..6)]
    );
    let target = rng.gen_range(200..2000);
    while s.len() + 90 < target {
        s += &format!(
            "{{\"sku\":\"SKU-{:06}\",\"price\":{},\"qty\":{},\"status\":\"{}\"}},",
            rng.gen_range(0..1_000_000),
            rng.gen_range(100..100_000),
            rng.gen_range(1..20),
            words[rng.gen_range(0..6)]
        );
    }
    s += "],\"note\":\"ok\"}";
    s.into_bytes()
}

fn stored(db: &HashDbm) -> u64 {
    let info = db.inspect().unwrap();
    info.iter().find(|(k, _)| k == "eff_data_size").unwrap().1.parse().unwrap()
}

fn main() -> kuradb::Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let modes = RecordCompMode::compressing();
    for (mode, n, rebuild) in modes.into_iter().flat_map(|m| [(m, 800, false), (m, 20_000, true)]) {
        let path = dir.path().join(format!("{mode}-{n}.kh"));
        let db = HashDbm::open(
            &path,
            Access::ReadWrite,
            &HashOptions::default().num_buckets(50_000).record_comp_mode(mode),
        )?;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(19);
        let (mut raw, mut keys) = (0u64, 0u64);
        for i in 0..n {
            let key = format!("{i:08}");
            let value = json_value(&mut rng, i);
            raw += value.len() as u64;
            keys += key.len() as u64;
            db.set(key.as_bytes(), &value)?;
        }
        if rebuild {
            db.rebuild()?;
        }
        let dict = db.inspect()?.into_iter().find(|(k, _)| k == "record_comp_dict").map(|(_, v)| v);
        let ratio = (stored(&db) - keys) as f64 / raw as f64;
        println!("{mode}: {n} values, {raw} bytes, stored {:.3} of it, dictionary {dict:?}", ratio);
        db.close()?;
    }
    Ok(())
}

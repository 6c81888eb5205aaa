//! HashDbm is safe to share between threads: concurrent writers of disjoint
//! keys lose nothing and readers never see a torn or foreign value, and
//! multi-key compare-exchanges are atomic against each other and against
//! multi-key reads and walks.
//!
//! The tables are tiny (a few buckets), so every thread's keys share chains
//! with every other thread's; values change size, so updates both stay in
//! place and move. Each test runs on every spec of `common::hash::specs`.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use common::hash::{self as h, show, Model};
use kuradb::dbm::hash::{HashDbm, HashOptions, UpdateMode};
use kuradb::dbm::{Access, Action, Dbm, Durability};
use kuradb::file::FileSpec;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const THREADS: usize = 4;
/// Keys per writer thread.
const KEYS: usize = 40;
/// Operations per writer thread.
const OPS: usize = 1500;
/// How many times fewer operations run on direct I/O, where each write waits
/// for the device.
const DIRECT_SCALE: usize = 5;

/// The number of operations of a test for `file`, from `ops` for the others.
fn scaled(ops: usize, file: &FileSpec) -> usize {
    if file.direct {
        ops / DIRECT_SCALE
    } else {
        ops
    }
}

fn key(thread: usize, k: usize) -> Vec<u8> {
    format!("t{thread}-k{k}").into_bytes()
}

/// The value written as the `seq`th write of `key`: the key and the sequence
/// number, then filler determined by both, `len` bytes in all (at least the prefix).
fn value(key: &[u8], seq: u64, len: usize) -> Vec<u8> {
    let mut v = format!("{}#{seq}#", String::from_utf8_lossy(key)).into_bytes();
    let filler = v.len()..len.max(v.len());
    v.extend(filler.map(|i| (seq as usize * 31 + i * 7 + key.len()) as u8));
    v
}

/// Whether `v` is a value [`value`] could have made for `key`.
fn well_formed(key: &[u8], v: &[u8]) -> bool {
    let prefix = format!("{}#", String::from_utf8_lossy(key)).into_bytes();
    let Some(rest) = v.strip_prefix(prefix.as_slice()) else { return false };
    let Some(hash) = rest.iter().position(|&b| b == b'#') else { return false };
    let Some(seq) = std::str::from_utf8(&rest[..hash]).ok().and_then(|s| s.parse::<u64>().ok()) else {
        return false;
    };
    value(key, seq, v.len()) == v
}

fn options(file: &FileSpec, update_mode: UpdateMode, cache_buckets: bool) -> HashOptions {
    h::options(file).num_buckets(5).update_mode(update_mode).cache_buckets(cache_buckets)
}

/// The tunings each spec runs with: in-place updates with the default 8-byte
/// alignment, reading the bucket array from the file; appending ones with a
/// bucket cache and unaligned records, which share file blocks (so the
/// parallel block-I/O specs must serialise writes to a shared block).
fn tunings(file: &FileSpec) -> Vec<(String, HashOptions)> {
    vec![
        ("in-place".to_string(), options(file, UpdateMode::InPlace, false)),
        ("appending+cache+unaligned".to_string(), options(file, UpdateMode::Appending, true).align_pow(0)),
    ]
}

/// One writer's work: random sets and removes of its own keys, checked
/// against its own model as it goes, and reads of every thread's keys, which
/// must be absent or well formed. Answers the thread's model, or what went wrong.
fn writer(db: &HashDbm, thread: usize, seed: u64, ops: usize, hard_syncs: bool) -> Result<Model, String> {
    let mut rng = SmallRng::seed_from_u64(seed ^ thread as u64);
    let mut model = Model::new();
    for op in 0..ops {
        let k = key(thread, rng.gen_range(0..KEYS));
        let fail = |what: String| format!("thread {thread}, op {op} on {}: {what}", show(&k));
        match rng.gen_range(0..50) {
            0..=24 => {
                let v = value(&k, op as u64, rng.gen_range(0..300));
                db.set(&k, &v).map_err(|e| fail(format!("set: {e}")))?;
                model.insert(k, v);
            }
            25..=34 => {
                let existed = db.remove(&k).map_err(|e| fail(format!("remove: {e}")))?;
                if existed != model.remove(&k).is_some() {
                    return Err(fail(format!("remove answered existed = {existed}")));
                }
            }
            35..=39 => {
                let got = db.get(&k).map_err(|e| fail(format!("get: {e}")))?;
                if got.as_ref() != model.get(&k) {
                    return Err(fail(format!("get answered {:?}", got.as_deref().map(show))));
                }
            }
            40..=48 => {
                let other = key(rng.gen_range(0..THREADS), rng.gen_range(0..KEYS));
                if let Some(v) = db.get(&other).map_err(|e| fail(format!("get {}: {e}", show(&other))))? {
                    if !well_formed(&other, &v) {
                        return Err(fail(format!("read {} = {}, not its value", show(&other), show(&v))));
                    }
                }
            }
            _ => {
                let sync = db.synchronize(if hard_syncs && rng.gen_ratio(1, 4) {
                    Durability::Hard
                } else {
                    Durability::Soft
                });
                sync.map_err(|e| fail(format!("synchronize: {e}")))?;
            }
        }
    }
    Ok(model)
}

/// Four threads setting and removing their own keys, sharing every chain,
/// while reading each other's, end with the database holding exactly the
/// union of their models, also after reopening; no read sees a torn value.
#[test]
fn disjoint_writers_end_with_the_merged_model() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let mut failures = Vec::new();
    for (name, file) in h::specs() {
        for (tuning, o) in tunings(&file) {
            let what = format!("[{name}] {tuning}");
            let path = dir.path().join(format!("{name}-{tuning}.kh"));
            let db = HashDbm::open(&path, Access::ReadWrite, &o).expect("create");
            let seed: u64 = rand::random();
            let ops = scaled(OPS, &file);
            let results: Vec<Result<Model, String>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..THREADS)
                    .map(|t| {
                        let db = &db;
                        s.spawn(move || writer(db, t, seed, ops, t == 0))
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().expect("a writer panicked")).collect()
            });
            let mut merged = Model::new();
            let mut failed = false;
            for result in results {
                match result {
                    Ok(model) => merged.extend(model),
                    Err(e) => {
                        failures.push(format!("{what} (seed {seed}): {e}"));
                        failed = true;
                    }
                }
            }
            if failed {
                continue;
            }
            if let Err(e) = h::compare(&db, &merged) {
                failures.push(format!("{what} (seed {seed}): after the writers: {e}"));
                continue;
            }
            db.close().expect("close");
            let db = HashDbm::open(&path, Access::ReadOnly, &o).expect("reopen");
            if let Err(e) = h::compare(&db, &merged) {
                failures.push(format!("{what} (seed {seed}): reopened: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Accounts are 8 bytes of balance plus filler, so a transfer may resize them.
fn account(balance: i64, filler: usize) -> Vec<u8> {
    let mut v = balance.to_be_bytes().to_vec();
    v.resize(8 + filler, b'.');
    v
}

fn balance(v: &[u8]) -> i64 {
    i64::from_be_bytes(v[..8].try_into().expect("an account holds at least 8 bytes"))
}

const ACCOUNTS: usize = 8;
const INITIAL: i64 = 1000;
const TRANSFERS: usize = 400;

/// What one mover did: the net change of each account by its successful
/// transfers, and how many succeeded.
struct Flow {
    net: Vec<i64>,
    succeeded: usize,
}

/// One mover's work: `transfers` random transfers, each reading two accounts
/// and moving an amount by compare_exchange_multi if neither changed meanwhile.
fn mover(db: &HashDbm, accounts: &[&[u8]], seed: u64, transfers: usize) -> Result<Flow, String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut flow = Flow { net: vec![0; ACCOUNTS], succeeded: 0 };
    for _ in 0..transfers {
        let from = rng.gen_range(0..ACCOUNTS);
        let to = (from + rng.gen_range(1..ACCOUNTS)) % ACCOUNTS;
        let pair = [accounts[from], accounts[to]];
        let got = db.get_multi(&pair).map_err(|e| format!("get_multi: {e}"))?;
        let (Some(a), Some(b)) = (&got[0], &got[1]) else {
            return Err("an account vanished".to_string());
        };
        let amount = rng.gen_range(1..50);
        let new_a = account(balance(a) - amount, rng.gen_range(0..200));
        let new_b = account(balance(b) + amount, rng.gen_range(0..200));
        let moved = db
            .compare_exchange_multi(
                &[(pair[0], Some(a)), (pair[1], Some(b))],
                &[(pair[0], Some(&new_a)), (pair[1], Some(&new_b))],
            )
            .map_err(|e| format!("compare_exchange_multi: {e}"))?;
        if moved {
            flow.net[from] -= amount;
            flow.net[to] += amount;
            flow.succeeded += 1;
        }
    }
    Ok(flow)
}

/// Audits the total, by get_multi and (every fourth time) by a read-only
/// walk, until `done` and at least ten times; answers the number of audits.
fn auditor(db: &HashDbm, accounts: &[&[u8]], done: &AtomicBool) -> Result<u64, String> {
    let total = INITIAL * ACCOUNTS as i64;
    let mut n = 0;
    while !done.load(Ordering::Acquire) || n < 10 {
        let sum: i64 = if n % 4 == 3 {
            let mut sum = 0;
            db.process_each(Access::ReadOnly, &mut |_, v| {
                sum += balance(v);
                Action::Keep
            })
            .map_err(|e| format!("process_each: {e}"))?;
            sum
        } else {
            let got = db.get_multi(accounts).map_err(|e| format!("get_multi: {e}"))?;
            got.iter().map(|v| v.as_deref().map_or(0, balance)).sum()
        };
        if sum != total {
            return Err(format!("audit {n} saw a total of {sum}, not {total}"));
        }
        n += 1;
    }
    Ok(n)
}

/// Transfers between accounts by compare_exchange_multi from four threads keep
/// the total constant in every atomic multi-key read and walk along the way,
/// and leave each account at its initial balance plus the net of the
/// transfers that reported success.
#[test]
fn multi_key_transfers_keep_the_sum() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let names: Vec<Vec<u8>> = (0..ACCOUNTS).map(|i| format!("account-{i}").into_bytes()).collect();
    let accounts: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
    let mut failures = Vec::new();
    for (name, file) in h::specs() {
        for (tuning, o) in tunings(&file) {
            let path = dir.path().join(format!("{name}-{tuning}-accounts.kh"));
            let db = HashDbm::open(&path, Access::ReadWrite, &o).expect("create");
            for a in &accounts {
                db.set(a, &account(INITIAL, 0)).expect("open an account");
            }
            let seed: u64 = rand::random();
            let what = format!("[{name}] {tuning} (seed {seed})");
            let transfers = scaled(TRANSFERS, &file);
            let done = AtomicBool::new(false);
            let (flows, audit) = std::thread::scope(|s| {
                let (db, accounts) = (&db, &accounts);
                let movers: Vec<_> = (0..THREADS as u64)
                    .map(|t| s.spawn(move || mover(db, accounts, seed ^ t, transfers)))
                    .collect();
                let audit = s.spawn(|| auditor(db, accounts, &done));
                let flows: Vec<_> = movers.into_iter().map(|m| m.join().expect("a mover panicked")).collect();
                done.store(true, Ordering::Release);
                (flows, audit.join().expect("the auditor panicked"))
            });
            if let Err(e) = audit {
                failures.push(format!("{what}: {e}"));
            }
            let mut expected = vec![INITIAL; ACCOUNTS];
            let mut succeeded = 0;
            for flow in flows {
                match flow {
                    Ok(flow) => {
                        expected.iter_mut().zip(flow.net).for_each(|(e, d)| *e += d);
                        succeeded += flow.succeeded;
                    }
                    Err(e) => failures.push(format!("{what}: a mover: {e}")),
                }
            }
            if succeeded == 0 {
                failures.push(format!("{what}: no transfer succeeded"));
            }
            let finals: Vec<i64> =
                accounts.iter().map(|a| db.get(a).expect("get").map_or(i64::MIN, |v| balance(&v))).collect();
            if finals != expected {
                failures.push(format!("{what}: balances {finals:?}, expected {expected:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

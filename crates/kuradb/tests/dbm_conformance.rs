//! Every database class passes the conformance suite (`common::conformance`):
//! HashDbm in place and appending on several files, TreeDbm in several key
//! orders, SkipDbm with and without spills, the on-memory classes with and
//! without a flat file, and a set of shards over each class.
//!
//! Tunings are tiny where a class has them (few buckets, small pages, few
//! levels), so that chains are long, nodes split and merge, and updates
//! spill, with the few records a sequence makes.

mod common;

use std::path::Path;

use common::conformance::{self, Bug, Caps, Storage, Subject};
use kuradb::dbm::baby::{BabyDbm, BabyOptions};
use kuradb::dbm::cache::{CacheDbm, CacheOptions};
use kuradb::dbm::hash::{HashDbm, HashOptions, RecordCrcMode, UpdateMode};
use kuradb::dbm::poly::Params;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::skip::{SkipDbm, SkipOptions};
use kuradb::dbm::std_map::{StdHashDbm, StdOptions, StdTreeDbm};
use kuradb::dbm::tiny::{TinyDbm, TinyOptions};
use kuradb::dbm::tree::{KeyComparator, TreeDbm};
use kuradb::dbm::{Access, Dbm};
use kuradb::file::FileSpec;

/// Random sequences for the quick on-memory classes with a flat file, and
/// without one.
const FLAT_CASES: u32 = 128;
const MEMORY_CASES: u32 = 32;

fn spec(name: &str) -> FileSpec {
    common::hash::specs().into_iter().find(|(n, _)| *n == name).map(|(_, s)| s).expect("a listed spec")
}

fn boxed<D: Dbm + 'static>(db: kuradb::Result<D>) -> kuradb::Result<Box<dyn Dbm>> {
    Ok(Box::new(db?))
}

fn hash(spec_name: &str, mode: UpdateMode, tune: impl Fn(&mut HashOptions)) -> Subject {
    let mut options = HashOptions::default().file(spec(spec_name)).num_buckets(3).update_mode(mode);
    tune(&mut options);
    Subject::new(
        format!("HashDbm {mode:?} on {spec_name}"),
        Caps::unordered(Storage::File),
        move |path, writable| {
            boxed(HashDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &options))
        },
    )
}

#[test]
fn hash_in_place_on_mmap() {
    conformance::check(&hash("mmap-para", UpdateMode::InPlace, |_| {}));
}

#[test]
fn hash_appending_on_positional_file() {
    conformance::check(&hash("pos-para", UpdateMode::Appending, |o| o.align_pow = 0));
}

#[test]
fn hash_in_place_on_block_io_with_page_cache_and_checksums() {
    conformance::check(&hash("pos-atom-block512-pagecache", UpdateMode::InPlace, |o| {
        o.record_crc_mode = RecordCrcMode::Crc32;
        o.cache_buckets = true;
    }));
}

#[test]
fn hash_appending_on_padded_blocks() {
    conformance::check(&hash("pos-para-block4096-padding", UpdateMode::Appending, |o| o.num_buckets = 1));
}

fn tree(spec_name: &str, cmp: KeyComparator) -> Subject {
    let options = common::tree::options(&spec(spec_name), cmp, 96, 3, 2, 7);
    Subject::new(
        format!("TreeDbm {} on {spec_name}", cmp.name()),
        Caps::ordered(cmp, Storage::File),
        move |path, writable| {
            boxed(TreeDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &options))
        },
    )
}

#[test]
fn tree_lexical_on_mmap() {
    conformance::check(&tree("mmap-para", KeyComparator::Lexical));
}

#[test]
fn tree_decimal_on_block_io_with_page_cache() {
    conformance::check(&tree("pos-atom-block512-pagecache", KeyComparator::Decimal));
}

#[test]
fn tree_real_reverse_on_positional_file() {
    conformance::check(&tree("pos-para", KeyComparator::RealReverse));
}

fn skip_caps() -> Caps {
    Caps { duplicates: true, deferred: true, ..Caps::ordered(KeyComparator::Lexical, Storage::File) }
}

#[test]
fn skip_on_mmap() {
    let options = SkipOptions::default().step_unit(2).max_level(3).max_cached_records(2);
    conformance::check(&Subject::new("SkipDbm on mmap-para", skip_caps(), move |path, writable| {
        boxed(SkipDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &options))
    }));
}

#[test]
fn skip_with_spills_and_no_cache() {
    let options = SkipOptions::default()
        .file(spec("pos-para"))
        .step_unit(3)
        .max_level(2)
        .max_cached_records(0)
        .sort_mem_size(100);
    conformance::check(&Subject::new("SkipDbm spilling on pos-para", skip_caps(), move |path, writable| {
        boxed(SkipDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &options))
    }));
}

/// An on-memory class, with a flat file or without one.
fn memory<D: Dbm + 'static>(
    name: &str,
    caps: impl Fn(Storage) -> Caps,
    with_file: bool,
    new: impl Fn() -> kuradb::Result<D> + Send + Sync + 'static,
    open: impl Fn(&Path, bool) -> kuradb::Result<D> + Send + Sync + 'static,
) -> Subject {
    if with_file {
        Subject::new(format!("{name} with a flat file"), caps(Storage::Flat), move |p, w| boxed(open(p, w)))
            .cases(FLAT_CASES)
    } else {
        Subject::new(format!("{name} on memory"), caps(Storage::Memory), move |_, _| boxed(new()))
            .cases(MEMORY_CASES)
    }
}

fn tiny(with_file: bool) -> Subject {
    // One bucket a shard to start with: chains are long and shards resize constantly.
    let o = TinyOptions::default().num_buckets(1).truncate(false);
    let o2 = o.clone();
    memory(
        "TinyDbm",
        Caps::unordered,
        with_file,
        move || Ok(TinyDbm::new(&o)),
        move |p, w| TinyDbm::open(p, if w { Access::ReadWrite } else { Access::ReadOnly }, &o2),
    )
}

#[test]
fn tiny_on_memory() {
    conformance::check(&tiny(false));
}

#[test]
fn tiny_with_a_flat_file() {
    conformance::check(&tiny(true));
}

fn baby(cmp: KeyComparator, with_file: bool) -> Subject {
    let o = BabyOptions::default().max_page_size(40).max_branches(3).comparator(cmp).truncate(false);
    let o2 = o.clone();
    let caps = move |storage| Caps::ordered(cmp, storage);
    let subject = memory(
        &format!("BabyDbm {}", cmp.name()),
        caps,
        with_file,
        move || BabyDbm::new(&o),
        move |p, w| BabyDbm::open(p, if w { Access::ReadWrite } else { Access::ReadOnly }, &o2),
    );
    // Eight orders share the cases one class gets, on sequences long
    // enough to grow trees of tiny pages several levels deep.
    let cases = if with_file { subject.cases / 8 } else { subject.cases };
    subject.cases(cases).steps(80)
}

#[test]
fn baby_on_memory() {
    conformance::check(&baby(KeyComparator::Lexical, false));
}

#[test]
fn baby_with_a_flat_file_in_every_order() {
    for &cmp in KeyComparator::all() {
        conformance::check(&baby(cmp, true));
    }
}

/// A cap far above the few hundred records a check makes, with a table
/// small enough to make in a moment for every case.
const UNREACHED_CAP: u64 = 10_000;

fn cache(with_file: bool) -> Subject {
    let o = CacheOptions::default().cap_rec_num(UNREACHED_CAP);
    let o2 = o.clone();
    memory(
        "CacheDbm",
        Caps::unordered,
        with_file,
        move || CacheDbm::new(&o),
        move |p, w| CacheDbm::open(p, if w { Access::ReadWrite } else { Access::ReadOnly }, &o2),
    )
}

#[test]
fn cache_on_memory() {
    conformance::check(&cache(false));
}

#[test]
fn cache_with_a_flat_file() {
    conformance::check(&cache(true));
}

fn std_hash(with_file: bool) -> Subject {
    let o = StdOptions::default();
    memory(
        "StdHashDbm",
        Caps::unordered,
        with_file,
        move || Ok(StdHashDbm::new(&StdOptions::default())),
        move |p, w| StdHashDbm::open(p, if w { Access::ReadWrite } else { Access::ReadOnly }, &o),
    )
}

#[test]
fn std_hash_on_memory() {
    conformance::check(&std_hash(false));
}

#[test]
fn std_hash_with_a_flat_file() {
    conformance::check(&std_hash(true));
}

fn std_tree(with_file: bool) -> Subject {
    let o = StdOptions::default();
    let caps = |storage| Caps::ordered(KeyComparator::Lexical, storage);
    memory(
        "StdTreeDbm",
        caps,
        with_file,
        move || Ok(StdTreeDbm::new(&StdOptions::default())),
        move |p, w| StdTreeDbm::open(p, if w { Access::ReadWrite } else { Access::ReadOnly }, &o),
    )
}

#[test]
fn std_tree_on_memory() {
    conformance::check(&std_tree(false));
}

#[test]
fn std_tree_with_a_flat_file() {
    conformance::check(&std_tree(true));
}

/// Three shards of `class` (with `more` parameters), opened by name as a
/// program would; the set walks one shard after another in process_each.
fn shards(class: &str, more: &str, caps: Caps) -> Subject {
    let params = Params::parse(&format!("num_shards=3,dbm={class}{more}")).expect("parameters");
    let mut caps = Caps { each_in_order: false, ..caps };
    if caps.order.is_some() {
        caps.known_bugs = &[Bug::CursorMissesWritesBeside];
    }
    let subject = Subject::new(format!("ShardDbm of {class}"), caps, move |path, writable| {
        boxed(PolyDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &params))
    });
    // Three files to write and synchronize at every step.
    subject.cases(if caps.storage == Storage::File { 8 } else { 16 })
}

#[test]
fn shards_of_hash() {
    conformance::check(&shards("hash", ",num_buckets=3", Caps::unordered(Storage::File)));
}

#[test]
fn shards_of_tree() {
    let caps = Caps::ordered(KeyComparator::Lexical, Storage::File);
    conformance::check(&shards("tree", ",max_page_size=96,max_branches=3,num_buckets=7", caps));
}

#[test]
fn shards_of_skip() {
    conformance::check(&shards("skip", ",step_unit=2,max_level=3", skip_caps()));
}

#[test]
fn shards_of_tiny() {
    conformance::check(&shards("tiny", ",num_buckets=1", Caps::unordered(Storage::Flat)));
}

#[test]
fn shards_of_baby() {
    let caps = Caps::ordered(KeyComparator::Decimal, Storage::Flat);
    conformance::check(&shards("baby", ",max_page_size=40,max_branches=3,key_comparator=decimal", caps));
}

#[test]
fn shards_of_cache() {
    conformance::check(&shards(
        "cache",
        &format!(",cap_rec_num={UNREACHED_CAP}"),
        Caps::unordered(Storage::Flat),
    ));
}

#[test]
fn shards_of_std_hash() {
    conformance::check(&shards("stdhash", ",num_buckets=1", Caps::unordered(Storage::Flat)));
}

#[test]
fn shards_of_std_tree() {
    conformance::check(&shards("stdtree", "", Caps::ordered(KeyComparator::Lexical, Storage::Flat)));
}

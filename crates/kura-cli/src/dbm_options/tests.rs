//! The opener: extensions, defaults, refusals and phases.
use std::collections::BTreeMap;
use std::path::Path;

use kuradb::dbm::tree::TreeOptions;

use super::*;

#[test]
fn auto_follows_the_extension_as_kura_util_does() {
    let auto = |path: &str| DbmClass::from_extension(Path::new(path));
    assert_eq!(auto("/tmp/a.TKH"), Some(DbmClass::Hash));
    assert_eq!(auto("casket.tkt"), Some(DbmClass::Tree));
    assert_eq!(auto("casket.Tree"), Some(DbmClass::Tree));
    assert_eq!(auto("casket.flat"), Some(DbmClass::Tiny));
    assert_eq!(auto("casket"), None);
    assert_eq!(parse_dbm_name("Hash"), Ok(DbmChoice(Some(DbmClass::Hash))));
    assert_eq!(parse_dbm_name("auto"), Ok(DbmChoice(None)));
    assert!(parse_dbm_name("poly").unwrap_err().contains("expected one of auto, hash, tree"));
    assert_eq!(DbmClass::StdTree.name(), "stdtree");
    // Every extension kura util accepts picks the same class here.
    for class in DbmClass::all() {
        for ext in class.extensions() {
            let path = format!("x.{ext}");
            let o = opener(&["--path", &path]).unwrap();
            assert_eq!(o.name(), class.name(), "{path}");
        }
    }
}

#[test]
fn negative_tuning_keeps_the_default_and_overflow_is_refused() {
    assert_eq!(tuning("buckets", -1, u64::MAX).unwrap(), None);
    assert_eq!(tuning("align_pow", 8, 63).unwrap(), Some(8));
    let err = tuning("align_pow", 64, 63).unwrap_err();
    assert!(err.message().contains("--align_pow 64"), "{err}");
}

#[derive(clap::Parser)]
struct Flags {
    #[command(flatten)]
    dbm: DbmOptions,
}

fn opener(args: &[&str]) -> Result<DbmOpener> {
    use clap::Parser;
    let flags = Flags::try_parse_from(std::iter::once("kura").chain(args.iter().copied()))
        .map_err(|e| invalid(e.to_string()))?;
    flags.dbm.opener()
}

/// What the database the flags open reports of itself, created in a
/// temporary directory (the flags' path is replaced by one there).
fn figures(args: &[&str]) -> BTreeMap<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opener(args).unwrap();
    let name = o.path.as_ref().and_then(|p| p.file_name()).unwrap().to_owned();
    o.path = Some(dir.path().join(name));
    let db = o.open(OpenMode::Create).unwrap();
    let figures = db.inspect().unwrap().into_iter().collect();
    o.close(db, OpenMode::Create).unwrap();
    figures
}

#[test]
fn tree_defaults_are_the_trees_and_flags_override_them() {
    let defaults = TreeOptions::default();
    let found = figures(&["--dbm", "tree", "--path", "x"]);
    assert_eq!(found["store_num_buckets"], defaults.hash.num_buckets.to_string());
    assert_eq!(found["store_align_pow"], defaults.hash.align_pow.to_string());
    assert_eq!(found["max_page_size"], defaults.max_page_size.to_string());
    assert_eq!(found["max_branches"], defaults.max_branches.to_string());
    assert_eq!(found["max_cached_pages"], defaults.max_cached_pages.to_string());
    assert_eq!(found["key_comparator"], defaults.comparator.unwrap_or(KeyComparator::Lexical).name());
    // auto picks tree for .tkt and .tree, with the same defaults.
    for path in ["x.tkt", "x.tree"] {
        assert_eq!(figures(&["--path", path])["store_num_buckets"], "131101");
    }
    let found = figures(&[
        "--dbm",
        "tree",
        "--path",
        "x",
        "--buckets",
        "1000",
        "--align_pow",
        "-1",
        "--append",
        "--max_page_size",
        "4000",
        "--max_branches",
        "-1",
        "--max_cached_pages",
        "50",
        "--key_comparator",
        "SignedDecimalKeyComparator",
    ]);
    assert_eq!(found["store_num_buckets"], "1000");
    assert_eq!(found["store_align_pow"], defaults.hash.align_pow.to_string());
    assert_eq!(found["store_update_mode"], "appending");
    let tuning = (&*found["max_page_size"], &*found["max_branches"], &*found["max_cached_pages"]);
    assert_eq!(tuning, ("4000", "256", "50"));
    assert_eq!(found["key_comparator"], KeyComparator::Decimal.name());
    // The hash database keeps its own defaults.
    let found = figures(&["--dbm", "hash", "--path", "x"]);
    assert_eq!(found["num_buckets"], kuradb::dbm::hash::HashOptions::default().num_buckets.to_string());
}

#[test]
fn tree_flags_are_refused_for_other_databases() {
    for flag in ["--max_page_size", "--max_branches", "--max_cached_pages", "--key_comparator"] {
        let value = if flag == "--key_comparator" { "decimal" } else { "1" };
        let err = opener(&["--dbm", "hash", "--path", "x.tkh", flag, value]).unwrap_err();
        assert!(err.message().contains(flag) && err.message().contains("tree"), "{err}");
        let err = opener(&["--path", "x.tkh", flag, value]).unwrap_err();
        assert!(err.message().contains(flag), "{err}");
    }
    let err = opener(&["--dbm", "tree", "--path", "x", "--key_comparator", "alpha"]).unwrap_err();
    assert!(err.message().contains("unknown key comparator \"alpha\""), "{err}");
    let err = opener(&["--dbm", "tree", "--path", "x", "--max_branches", "-"]).unwrap_err();
    assert!(err.message().contains("--max_branches"), "{err}");
}

#[test]
fn memory_databases_live_between_phases_without_a_path() {
    for name in ["tiny", "baby", "cache", "stdhash", "stdtree"] {
        let o = opener(&["--dbm", name]).unwrap();
        assert_eq!(o.name(), name);
        let db = o.open(OpenMode::Create).unwrap();
        db.set(b"k", b"v").unwrap();
        o.close(db, OpenMode::Create).unwrap();
        let db = o.open(OpenMode::Read).unwrap();
        assert_eq!(db.get(b"k").unwrap().unwrap(), b"v", "{name}: kept between phases");
        o.close(db, OpenMode::Read).unwrap();
        let db = o.open(OpenMode::Create).unwrap();
        assert_eq!(db.count().unwrap(), 0, "{name}: a new run starts empty");
        o.close(db, OpenMode::Create).unwrap();
    }
}

#[test]
fn memory_databases_with_a_path_keep_a_flat_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.tkmb");
    let path = path.to_str().unwrap();
    let o = opener(&["--path", path, "--key_comparator", "decimal"]).unwrap();
    assert_eq!(o.name(), "baby");
    let db = o.open(OpenMode::Create).unwrap();
    db.set(b"10", b"x").unwrap();
    db.set(b"9", b"y").unwrap();
    o.close(db, OpenMode::Create).unwrap();
    let db = o.open(OpenMode::Read).unwrap();
    let mut c = db.iter().unwrap();
    c.first().unwrap();
    assert_eq!(c.get().unwrap().unwrap().0, b"9", "the comparator orders the keys");
    assert!(db.set(b"1", b"z").is_err(), "a reading phase opens for reading");
    drop(c);
    o.close(db, OpenMode::Read).unwrap();
}

#[test]
fn memory_flags_are_checked_and_others_refused() {
    opener(&["--dbm", "cache", "--cap_rec_num", "10", "--cap_mem_size", "1000"]).unwrap();
    opener(&["--dbm", "tiny", "--buckets", "100"]).unwrap();
    opener(&["--dbm", "stdhash", "--buckets", "100"]).unwrap();
    opener(&["--dbm", "baby", "--key_comparator", "decimal", "--max_page_size", "1000"]).unwrap();
    assert!(opener(&["--dbm", "cache", "--cap_rec_num", "0"]).is_err());
    assert!(opener(&["--dbm", "baby", "--max_branches", "2"]).is_err());
    for (dbm, flag, value) in [
        ("tiny", "--cap_rec_num", "5"),
        ("hash", "--cap_mem_size", "5"),
        ("baby", "--buckets", "5"),
        ("stdtree", "--buckets", "5"),
        ("tiny", "--max_page_size", "100"),
        ("baby", "--max_cached_pages", "5"),
        ("cache", "--align_pow", "3"),
        ("tiny", "--block_size", "512"),
    ] {
        let mut args = vec!["--dbm", dbm, flag, value];
        if dbm == "hash" {
            args.extend(["--path", "x.tkh"]);
        }
        let err = opener(&args).unwrap_err();
        assert!(err.message().contains(flag), "{err}");
    }
}

/// `--params` reaches any parameter of the class, with or without a flag
/// of its own; one the class does not take is refused naming it, and one
/// given both as a flag and in `--params` is refused as given twice.
#[test]
fn params_reach_every_parameter_of_the_class() {
    let found = figures(&["--dbm", "hash", "--path", "x.kh", "--params", "num_buckets=5003,align_pow=5"]);
    assert_eq!(found["num_buckets"], "5003", "{found:?}");
    let found = figures(&["--dbm", "tree", "--path", "x.kt", "--params", "max_branches=40"]);
    assert_eq!(found["max_branches"], "40", "{found:?}");
    let err = opener(&["--dbm", "hash", "--path", "x.kh", "--params", "max_branches=40"]).unwrap_err();
    assert!(
        err.message().contains("--params: max_branches is not a parameter of the hash database"),
        "{err}"
    );
    let err = opener(&["--path", "x.kh", "--buckets", "10", "--params", "num_buckets=20"]).unwrap_err();
    assert!(err.message().contains("--params") && err.message().contains("twice"), "{err}");
    let err = opener(&["--path", "x.kh", "--params", "num_buckets"]).unwrap_err();
    assert!(err.message().starts_with("--params"), "{err}");
}

/// The skip database's updates show at the next synchronization, the
/// registry says, and the opener's checks follow it.
#[test]
fn updates_follow_the_registry() {
    for class in DbmClass::all() {
        let path = format!("x.{}", class.extensions()[0]);
        let o = opener(&["--path", &path]).unwrap();
        assert_eq!(o.updates() != Updates::Immediate, class.updates_at_sync(), "{}", class.name());
    }
    assert!(DbmClass::Skip.updates_at_sync());
}

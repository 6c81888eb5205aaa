//! Files written by the reference implementation (Tkrzw's `tkrzw_dbm_util`
//! and `tkrzw_dbm_perf`, Debian's tkrzw-utils) read by
//! [`kuradb::dbm::tkrzw::ReferenceDbm`]: every record survives, for each
//! format and its variants; a file whose writer was killed is salvaged to at
//! least what the reference's own restore keeps; damaged files are errors
//! naming the problem, never panics. Where the tools are missing, each test
//! prints a message and passes without checking.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use kuradb::dbm::class::DbmClass;
use kuradb::dbm::comparator::KeyComparator;
use kuradb::dbm::poly::{Params, PolyDbm};
use kuradb::dbm::tkrzw::{ReferenceDbm, ReferenceFormat};
use kuradb::dbm::{Access, Dbm};
use kuradb::varint::base128;
use kuradb::ErrorKind;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Whether the reference's tools are installed; says so when they are not.
fn have_tools() -> bool {
    let found = Command::new("tkrzw_dbm_util").arg("--version").output().is_ok();
    if !found {
        eprintln!("tkrzw_dbm_util is not installed (Debian: apt-get install tkrzw-utils): skipping");
    }
    found
}

fn util(args: &[&str]) {
    let out = Command::new("tkrzw_dbm_util").args(args).output().expect("running tkrzw_dbm_util");
    assert!(out.status.success(), "tkrzw_dbm_util {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Writes `records` as the reference's flat record file.
fn write_flat(path: &Path, records: &[(Vec<u8>, Vec<u8>)]) {
    let mut out = Vec::new();
    for (k, v) in records {
        for data in [k, v] {
            out.push(0xff);
            base128::put(&mut out, data.len() as u64);
            out.extend_from_slice(data);
        }
    }
    std::fs::write(path, out).unwrap();
}

/// Which keys [`records`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keys {
    Binary,
    Signed,
    Unsigned,
}

/// Random binary keys and values of several sizes, and text keys ("rm-N")
/// the tool can remove by argument.
fn records(rng: &mut SmallRng, n: usize, keys: Keys) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let key: Vec<u8> = if keys != Keys::Binary {
                // Distinct numbers, written without leading zeros, so that no
                // two keys are equal to a numeric comparator.
                let low = if keys == Keys::Signed { -100_000 } else { 0 };
                format!("{}", rng.gen_range(low..100_000i64)).into_bytes()
            } else if i % 10 == 0 {
                format!("rm-{i}").into_bytes()
            } else {
                (0..rng.gen_range(1..24)).map(|_| rng.gen()).collect()
            };
            // No empty value here: tkrzw_dbm_util 1.0.25's import fails ("odd
            // number of records") on some at its read buffer's edge; `build`
            // sets empty values one by one instead.
            let size = [1, 3, 40, 300, 2000][rng.gen_range(0..5)];
            (key, (0..size).map(|_| rng.gen()).collect())
        })
        .collect()
}

/// Builds a reference database at `path` with `create` options: imports
/// records, overwrites some (with longer and shorter values), removes the
/// text-keyed ones; answers what it should hold.
fn build(dir: &Path, path: &Path, create: &[&str], seed: u64, keys: Keys) -> Model {
    let mut rng = SmallRng::seed_from_u64(seed);
    let path_s = path.to_str().unwrap();
    let mut args = vec!["create"];
    args.extend_from_slice(create);
    args.push(path_s);
    util(&args);
    let first = records(&mut rng, 300, keys);
    let flat = dir.join("in.flat");
    write_flat(&flat, &first);
    util(&["import", path_s, flat.to_str().unwrap()]);
    let mut model: Model = first.iter().cloned().collect();
    let mut again: Vec<(Vec<u8>, Vec<u8>)> = first
        .iter()
        .step_by(3)
        .map(|(k, _)| k.clone())
        .zip(records(&mut rng, 100, Keys::Binary).into_iter().map(|r| r.1))
        .collect();
    again.truncate(100);
    write_flat(&flat, &again);
    util(&["import", path_s, flat.to_str().unwrap()]);
    model.extend(again);
    let removed: Vec<Vec<u8>> = model.keys().filter(|k| k.starts_with(b"rm-")).take(8).cloned().collect();
    for key in removed {
        util(&["remove", path_s, std::str::from_utf8(&key).unwrap()]);
        model.remove(&key);
    }
    for key in ["1000001", "1000002"] {
        util(&["set", path_s, key, ""]);
        model.insert(key.as_bytes().to_vec(), Vec::new());
    }
    model
}

/// Checks that `db` holds exactly `model`, by lookups and by its cursor, in
/// `order` if given.
fn check(db: &dyn Dbm, model: &Model, order: Option<KeyComparator>, what: &str) {
    assert_eq!(db.count().unwrap(), model.len() as u64, "{what}");
    for (k, v) in model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{what}: key {k:?}");
    }
    assert_eq!(db.get(b"no such key \x00").unwrap(), None);
    let mut seen = Vec::new();
    let mut cursor = db.iter().unwrap();
    cursor.first().unwrap();
    while let Some((k, v)) = cursor.get().unwrap() {
        assert_eq!(model.get(&k), Some(&v), "{what}");
        seen.push(k);
        cursor.next().unwrap();
    }
    assert_eq!(seen.len(), model.len(), "{what}");
    if let Some(order) = order {
        assert!(
            seen.windows(2).all(|w| order.compare(&w[0], &w[1]).is_lt()),
            "{what}: not in {order:?} order"
        );
    }
}

#[test]
fn hash_files_of_every_variant_read_whole() {
    if !have_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut seed = 0;
    for mode in ["--in_place", "--append"] {
        for (width, pow) in
            [("4", "0"), ("4", "1"), ("5", "2"), ("4", "3"), ("5", "4"), ("3", "3"), ("6", "9")]
        {
            for crc in ["0", "8", "16", "32"] {
                if crc != "0" && pow != "3" && pow != "4" {
                    continue;
                }
                seed += 1;
                let path = dir.path().join(format!("h{seed}.tkh"));
                let create = [
                    "--dbm",
                    "hash",
                    mode,
                    "--offset_width",
                    width,
                    "--align_pow",
                    pow,
                    "--record_crc",
                    crc,
                    "--buckets",
                    "97",
                ];
                let model = build(dir.path(), &path, &create, seed, Keys::Binary);
                let what = format!("hash {mode} offset_width {width} align_pow {pow} crc {crc}");
                let db = ReferenceDbm::open(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!((db.reference_class(), db.salvage()), ("HashDBM", None), "{what}");
                check(&db, &model, None, &what);
                let inspect: BTreeMap<String, String> = db.inspect().unwrap().into_iter().collect();
                assert_eq!(inspect["num_records"], model.len().to_string(), "{what}");
                assert_eq!(inspect["update_mode"], if mode == "--append" { "appending" } else { "in-place" });
            }
        }
    }
}

#[test]
fn tree_files_read_in_their_comparators_order() {
    if !have_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], Keys, KeyComparator); 5] = [
        (&["--dbm", "tree", "--max_page_size", "300"], Keys::Binary, KeyComparator::Lexical),
        (
            &["--dbm", "tree", "--append", "--max_page_size", "500", "--align_pow", "4"],
            Keys::Binary,
            KeyComparator::Lexical,
        ),
        (
            &["--dbm", "tree", "--comparator", "dec", "--max_page_size", "200"],
            Keys::Signed,
            KeyComparator::Decimal,
        ),
        (&["--dbm", "tree", "--comparator", "hex", "--record_crc", "32"], Keys::Unsigned, KeyComparator::Hex),
        (
            &[
                "--dbm",
                "poly",
                "--params",
                "dbm=tree,key_comparator=RealNumberKeyComparator,max_page_size=400",
            ],
            Keys::Signed,
            KeyComparator::Real,
        ),
    ];
    for (i, (create, keys, order)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("t{i}.tkt"));
        let model = build(dir.path(), &path, create, 100 + i as u64, keys);
        let what = format!("tree {create:?}");
        let db =
            PolyDbm::open(&path, Access::ReadOnly, &Params::new()).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(db.key_order().unwrap(), Some(order), "{what}");
        check(&db, &model, Some(order), &what);
        let mut cursor = db.iter().unwrap();
        cursor.last().unwrap();
        let last = cursor.get().unwrap().unwrap().0;
        assert_eq!(model.keys().max_by(|a, b| order.compare(a, b)), Some(&last), "{what}");
    }
}

#[test]
fn skip_and_flat_files_read_whole() {
    if !have_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (i, create) in [
        &["--dbm", "skip"][..],
        &["--dbm", "skip", "--step_unit", "2", "--max_level", "3", "--offset_width", "5"],
    ]
    .into_iter()
    .enumerate()
    {
        // A skip database keeps every record set under a key, so the second
        // import adds records beside the first: the tool's own export is
        // the model, and a lookup answers the first of a key's records.
        let path = dir.path().join(format!("s{i}.tks"));
        build(dir.path(), &path, create, 200 + i as u64, Keys::Binary);
        let db = ReferenceDbm::open(&path).unwrap();
        // The default export of the tool is the flat record format.
        let flat = dir.path().join(format!("s{i}.flat"));
        util(&["export", path.to_str().unwrap(), flat.to_str().unwrap()]);
        assert_eq!(ReferenceFormat::of_file(&flat).unwrap(), Some(ReferenceFormat::Flat));
        let mine: Vec<(Vec<u8>, Vec<u8>)> = all(&db);
        assert_eq!(mine, all(&ReferenceDbm::open(&flat).unwrap()), "skip {create:?}");
        assert!(mine.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(db.count().unwrap(), mine.len() as u64);
        for (k, _) in &mine {
            let first = mine.iter().find(|r| &r.0 == k).unwrap();
            assert_eq!(db.get(k).unwrap().as_ref(), Some(&first.1));
        }
    }
    // The on-memory databases write a flat file with their class in its metadata.
    for (class, ext) in [("tiny", "tkmt"), ("baby", "tkmb"), ("stdhash", "tksh")] {
        let path = dir.path().join(format!("m.{ext}"));
        let model = build(dir.path(), &path, &["--dbm", class], 300, Keys::Binary);
        let db = ReferenceDbm::open(&path).unwrap();
        assert!(
            db.reference_class().eq_ignore_ascii_case(&format!("{class}DBM")),
            "{}",
            db.reference_class()
        );
        check(&db, &model, None, class);
    }
}

/// Every record of `db`, in its cursor's order.
fn all(db: &dyn Dbm) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut cursor = db.iter().unwrap();
    cursor.first().unwrap();
    while let Some(record) = cursor.get().unwrap() {
        out.push(record);
        cursor.next().unwrap();
    }
    out
}

/// Runs `tkrzw_dbm_perf sequence` on `path`, killing it with SIGKILL after
/// `millis`, and answers whether it was killed before it finished.
fn killed_writer(path: &Path, extra: &[&str], millis: u64) -> bool {
    let mut child = Command::new("tkrzw_dbm_perf")
        .args(["sequence", "--iter", "3000000", "--size", "8", "--set_only", "--random_key", "--path"])
        .arg(path)
        .args(extra)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("running tkrzw_dbm_perf");
    std::thread::sleep(std::time::Duration::from_millis(millis));
    let killed = child.kill().is_ok();
    let status = child.wait().unwrap();
    killed && !status.success()
}

#[test]
fn files_of_a_killed_writer_are_salvaged() {
    if !have_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str]); 5] = [
        ("k1.tkh", &["--dbm", "hash", "--buckets", "10000"]),
        ("k2.tkh", &["--dbm", "hash", "--append", "--buckets", "10000", "--record_crc", "16"]),
        (
            "k3.tkt",
            &["--dbm", "tree", "--buckets", "1000", "--max_cached_pages", "64", "--max_page_size", "1000"],
        ),
        ("k5.tkt", &["--dbm", "tree", "--append", "--page_update_write", "--align_pow", "4"]),
        ("k4.tkh", &["--dbm", "hash", "--file", "pos-para", "--buckets", "10000", "--align_pow", "0"]),
    ];
    for (name, extra) in cases {
        let path = dir.path().join(name);
        if !killed_writer(&path, extra, 400) {
            eprintln!("{name}: the writer finished before it was killed; nothing to salvage");
            continue;
        }
        let db = ReferenceDbm::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!db.is_healthy(), "{name}");
        let salvage = db.salvage().expect("an unhealthy file is salvaged");
        assert_eq!(salvage.records, db.count().unwrap());
        // Nothing garbage: every record is one the writer wrote.
        db.process_each(Access::ReadOnly, &mut |k, v| {
            assert!(k.len() == 8 && k.iter().all(u8::is_ascii_digit), "{name}: key {k:?}");
            assert!(v.len() == 8 && v.iter().all(u8::is_ascii_lowercase), "{name}: value {v:?}");
            kuradb::dbm::Action::Keep
        })
        .unwrap();
        // At least what the reference's own restore keeps, with the same values.
        let restored = dir.path().join(format!("restored-{name}"));
        util(&["restore", path.to_str().unwrap(), restored.to_str().unwrap()]);
        let theirs = ReferenceDbm::open(&restored).unwrap();
        assert!(db.count().unwrap() >= theirs.count().unwrap(), "{name}: {salvage:?}");
        theirs
            .process_each(Access::ReadOnly, &mut |k, v| {
                assert_eq!(db.get(k).unwrap().as_deref(), Some(v), "{name}");
                kuradb::dbm::Action::Keep
            })
            .unwrap();
        eprintln!("{name}: salvaged {salvage:?}; the reference's restore kept {}", theirs.count().unwrap());
    }
}

/// A reference file to damage: a small hash, tree and skip file.
fn small_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (name, create) in [
        ("d.tkh", &["--dbm", "hash", "--buckets", "31", "--record_crc", "8"][..]),
        ("d.tkt", &["--dbm", "tree", "--buckets", "31", "--max_page_size", "200", "--align_pow", "2"]),
        ("d.tks", &["--dbm", "skip"]),
    ] {
        let path = dir.join(name);
        let mut rng = SmallRng::seed_from_u64(7);
        let mut args = vec!["create"];
        args.extend_from_slice(create);
        args.push(path.to_str().unwrap());
        util(&args);
        write_flat(&dir.join("in.flat"), &records(&mut rng, 40, Keys::Binary));
        util(&["import", path.to_str().unwrap(), dir.join("in.flat").to_str().unwrap()]);
        out.push(path);
    }
    out
}

#[test]
fn damaged_files_are_errors_naming_the_problem() {
    if !have_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SmallRng::seed_from_u64(11);
    for path in small_files(dir.path()) {
        let good = std::fs::read(&path).unwrap();
        let bad = dir.path().join("bad");
        // Truncated: a clear error (or, cut in the header, not recognised).
        for cut in [good.len() - 1, good.len() / 2, 130, 100, 10] {
            std::fs::write(&bad, &good[..cut]).unwrap();
            match ReferenceDbm::open(&bad) {
                Ok(_) => panic!("{} cut to {cut} bytes opened", path.display()),
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::BrokenData, "{e}");
                    assert!(
                        e.message().contains("truncated")
                            || e.message().contains("cut short")
                            || e.message().contains("not a file of the reference")
                            || e.message().contains("record at offset"),
                        "{}: cut to {cut}: {e}",
                        path.display()
                    );
                }
            }
        }
        // Flipped bytes: never a panic; an error names the file, and a file
        // that still opens holds no more than it did.
        let whole = ReferenceDbm::open(&path).unwrap().count().unwrap();
        for _ in 0..300 {
            let mut data = good.clone();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..data.len());
                data[at] ^= 1 << rng.gen_range(0..8);
            }
            std::fs::write(&bad, &data).unwrap();
            for opened in [ReferenceDbm::open(&bad), ReferenceDbm::open_salvaging(&bad)] {
                match opened {
                    Ok(db) => assert!(db.count().unwrap() <= whole + 1, "{}", path.display()),
                    Err(e) => assert!(!e.message().is_empty()),
                }
            }
        }
    }
}

#[test]
fn what_the_reader_lacks_is_refused_by_name() {
    if !have_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A codec this reader does not decode: the reference's tools write
    // none, so its static flags are set by hand (the cyclic magic and the
    // checksums do not cover them).
    let path = dir.path().join("z.tkh");
    util(&["create", "--dbm", "hash", "--buckets", "7", path.to_str().unwrap()]);
    util(&["set", path.to_str().unwrap(), "k", "v"]);
    let mut data = std::fs::read(&path).unwrap();
    data[12] |= 0x50;
    std::fs::write(&path, data).unwrap();
    let err = ReferenceDbm::open(&path).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::NotImplemented);
    assert!(err.message().contains("encoded with an extra codec"), "{err}");
    // A comparator kuradb does not have.
    let path = dir.path().join("c.tkt");
    util(&["create", "--dbm", "tree", "--comparator", "lexcase", "--buckets", "7", path.to_str().unwrap()]);
    let err = PolyDbm::open(&path, Access::ReadOnly, &Params::new()).err().unwrap();
    assert!(err.message().contains("LexicalCaseKeyComparator, which kuradb does not have"), "{err}");
    // Writing is refused, whatever the method.
    let path = dir.path().join("w.tkh");
    util(&["create", "--dbm", "hash", "--buckets", "7", path.to_str().unwrap()]);
    util(&["set", path.to_str().unwrap(), "k", "v"]);
    let err = PolyDbm::open(&path, Access::ReadWrite, &Params::new()).err().unwrap();
    assert!(err.message().contains("opened read-only"), "{err}");
    let db = PolyDbm::open(&path, Access::ReadOnly, &Params::new()).unwrap();
    for err in [db.set(b"k", b"w").err(), db.remove(b"k").err(), db.clear().err(), db.rebuild().err()] {
        assert_eq!(err.unwrap().kind(), ErrorKind::ReadOnly);
    }
    let mut cursor = db.iter().unwrap();
    cursor.first().unwrap();
    assert!(cursor.remove().is_err() && cursor.set(b"x").is_err());
    drop(cursor);
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(db);
    // A writer that truncates replaces the file with an empty kuradb
    // database of the class its extension names, as truncate does to any file.
    let err = PolyDbm::open(&path, Access::ReadWrite, &Params::parse("truncate=no").unwrap()).err().unwrap();
    assert!(err.message().contains("opened read-only"), "{err}");
    let db = PolyDbm::open(&path, Access::ReadWrite, &Params::parse("truncate=true").unwrap()).unwrap();
    assert_eq!(db.class(), DbmClass::Hash);
    assert_eq!(db.count().unwrap(), 0);
    db.set(b"n", b"m").unwrap();
    db.close().unwrap();
    assert!(ReferenceFormat::of_file(&path).unwrap().is_none());
    let db = PolyDbm::open(&path, Access::ReadOnly, &Params::new()).unwrap();
    assert_eq!(db.get(b"n").unwrap().as_deref(), Some(&b"m"[..]));
    assert_eq!(db.get(b"k").unwrap(), None);
}

/// The compression modes of the reference's hash files.
const COMP_MODES: [&str; 4] = ["zlib", "zstd", "lz4", "lzma"];

#[test]
fn compressed_hash_and_tree_files_read_whole() {
    if !have_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (i, mode) in COMP_MODES.into_iter().enumerate() {
        let (update, crc) = if i % 2 == 0 { ("--in_place", "0") } else { ("--append", "32") };
        let hash = dir.path().join(format!("c{i}.tkh"));
        let create = ["--dbm", "hash", update, "--record_crc", crc, "--buckets", "97", "--record_comp", mode];
        let model = build(dir.path(), &hash, &create, 400 + i as u64, Keys::Binary);
        let db = ReferenceDbm::open(&hash).unwrap_or_else(|e| panic!("{mode}: {e}"));
        check(&db, &model, None, &format!("hash {create:?}"));
        let inspect: BTreeMap<String, String> = db.inspect().unwrap().into_iter().collect();
        assert_eq!(inspect["record_comp_mode"], mode);
        // Converted into a kuradb file, uncompressed and compressed.
        for (name, params) in
            [("plain.kh", "num_buckets=1000"), ("zstd.kh", "num_buckets=1000,record_comp_mode=zstd")]
        {
            let out = dir.path().join(format!("{mode}-{name}"));
            let params = Params::parse(params).unwrap();
            assert_eq!(db.convert(&out, &params, &mut |_| {}).unwrap(), model.len() as u64);
            let mine = PolyDbm::open(&out, Access::ReadOnly, &Params::new()).unwrap();
            check(&mine, &model, None, &format!("{mode} converted with {params:?}"));
        }
        let tree = dir.path().join(format!("c{i}.tkt"));
        let create =
            ["--dbm", "tree", update, "--buckets", "1000", "--max_page_size", "400", "--record_comp", mode];
        let model = build(dir.path(), &tree, &create, 500 + i as u64, Keys::Binary);
        let db =
            PolyDbm::open(&tree, Access::ReadOnly, &Params::new()).unwrap_or_else(|e| panic!("{mode}: {e}"));
        check(&db, &model, Some(KeyComparator::Lexical), &format!("tree {create:?}"));
    }
}

/// Writes `iter` records with `tkrzw_dbm_perf sequence` (values of 100
/// bytes, which compress) into a new file at `path`.
fn perf(path: &Path, iter: &str, extra: &[&str]) {
    let out = Command::new("tkrzw_dbm_perf")
        .args(["sequence", "--iter", iter, "--size", "100", "--set_only", "--random_key", "--path"])
        .arg(path)
        .args(extra)
        .output()
        .expect("running tkrzw_dbm_perf");
    assert!(out.status.success(), "tkrzw_dbm_perf {extra:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn compressed_files_read_as_the_reference_exports_them() {
    if !have_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for mode in COMP_MODES {
        for (ext, class) in [("tkh", "hash"), ("tkt", "tree")] {
            let path = dir.path().join(format!("p-{mode}.{ext}"));
            // The reference's lzma takes a millisecond a value.
            let iter = if mode == "lzma" { "300" } else { "3000" };
            perf(&path, iter, &["--dbm", class, "--buckets", "1000", "--record_comp", mode]);
            // The reference's own decoder writes the records uncompressed.
            let flat = dir.path().join(format!("p-{mode}-{ext}.flat"));
            util(&["export", path.to_str().unwrap(), flat.to_str().unwrap()]);
            let mut theirs = all(&ReferenceDbm::open(&flat).unwrap());
            let mut mine = all(&ReferenceDbm::open(&path).unwrap_or_else(|e| panic!("{mode} {class}: {e}")));
            theirs.sort();
            mine.sort();
            assert!(theirs.len() > 50, "{mode} {class}");
            assert_eq!(mine, theirs, "{mode} {class}");
        }
    }
}

#[test]
fn a_damaged_compressed_value_is_an_error_naming_its_offset() {
    if !have_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let value = "fruit salad, ".repeat(20);
    for mode in COMP_MODES {
        let path = dir.path().join(format!("d-{mode}.tkh"));
        let p = path.to_str().unwrap();
        util(&["create", "--dbm", "hash", "--buckets", "7", "--record_comp", mode, p]);
        util(&["set", p, "apple", &value]);
        util(&["set", p, "banana", "yellow"]);
        let good = std::fs::read(&path).unwrap();
        let at = good.windows(5).position(|w| w == b"apple").unwrap() + 5;
        let bad = dir.path().join("bad.tkh");
        let mut undecodable = 0;
        // Byte pairs changed by +1 and -1 keep the record's 6-bit checksum
        // (a sum), so that the damage reaches the decoder.
        for i in at..at + 12 {
            let mut data = good.clone();
            if data[i] == 255 || data[i + 1] == 0 {
                continue;
            }
            data[i] += 1;
            data[i + 1] -= 1;
            std::fs::write(&bad, &data).unwrap();
            match ReferenceDbm::open(&bad) {
                // Damage a codec without a check cannot see reads as another value.
                Ok(db) => assert_eq!(db.count().unwrap(), 2, "{mode}"),
                Err(e) if e.message().contains("does not decompress") => {
                    assert_eq!(e.kind(), ErrorKind::BrokenData);
                    // The offset named is the record's: its head just before the key.
                    let named: usize = e
                        .message()
                        .split("the record at offset ")
                        .nth(1)
                        .and_then(|r| r.split(':').next().and_then(|n| n.parse().ok()))
                        .unwrap_or_else(|| panic!("{mode}: no offset in {e}"));
                    assert!((at - 5 - 16..at - 5).contains(&named), "{mode}: {e}");
                    assert!(e.message().contains(mode), "{mode}: {e}");
                    undecodable += 1;
                    // Salvaged, the damaged record is lost and counted.
                    let db = ReferenceDbm::open_salvaging(&bad).unwrap();
                    assert_eq!(db.get(b"banana").unwrap().as_deref(), Some(&b"yellow"[..]));
                    assert_eq!(
                        (db.count().unwrap(), db.salvage().unwrap().damaged_regions),
                        (1, 1),
                        "{mode}"
                    );
                }
                Err(e) => panic!("{mode}: damage at {i} gave another error: {e}"),
            }
        }
        assert!(undecodable > 0, "{mode}: no damage reached the decoder");
    }
}

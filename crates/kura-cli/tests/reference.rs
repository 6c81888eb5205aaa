//! `kura util` on files of the reference implementation, both directions:
//! `kura util export --flat` writes what `tkrzw_dbm_util import` reads; the
//! reference's hash, tree and skip files answer `list`, `get`, `inspect` and
//! `export`, refuse writes, and `convert` into kuradb databases holding every
//! record, salvaging a file whose writer was killed. Where Debian's
//! tkrzw-utils is missing, each test prints a message and passes unchecked.

use std::path::Path;
use std::process::{Command, Output};

use kuradb::dbm::poly::{Params, PolyDbm};
use kuradb::dbm::{Access, Dbm};

fn kura(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kura")).arg("util").args(args).output().expect("the kura binary runs")
}

fn ok(args: &[&str]) -> Vec<u8> {
    let out = kura(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn tool(name: &str, args: &[&str]) -> Output {
    let out = Command::new(name).args(args).output().expect("the reference's tool runs");
    assert!(out.status.success(), "{name} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn have_tools() -> bool {
    let found = Command::new("tkrzw_dbm_util").arg("--version").output().is_ok();
    if !found {
        eprintln!("tkrzw_dbm_util is not installed (Debian: apt-get install tkrzw-utils): skipping");
    }
    found
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Every record of the database at `path`, in its cursor's order.
fn contents(path: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = PolyDbm::open(path, Access::ReadOnly, &Params::new()).unwrap();
    let mut out = Vec::new();
    let mut cursor = db.iter().unwrap();
    cursor.first().unwrap();
    while let Some(record) = cursor.get().unwrap() {
        out.push(record);
        cursor.next().unwrap();
    }
    out
}

/// Records with every byte value in keys and values, and sizes up to 5000.
fn records() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<(Vec<u8>, Vec<u8>)> =
        (0..=255u8).map(|b| (vec![b, b'k'], vec![b; usize::from(b) * 7])).collect();
    out.push((b"apple".to_vec(), b"red".to_vec()));
    out.push((b"big".to_vec(), vec![0xAB; 5000]));
    out.sort();
    out
}

#[test]
fn flat_exports_round_trip_through_the_reference_and_back() {
    if !have_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("ours.kt");
    let db = PolyDbm::open(&ours, Access::ReadWrite, &Params::new()).unwrap();
    for (k, v) in records() {
        db.set(&k, &v).unwrap();
    }
    db.close().unwrap();
    let flat = dir.path().join("ours.flat");
    ok(&["export", "--flat", s(&ours), s(&flat)]);
    for (name, class) in [("ref.tkh", "hash"), ("ref.tkt", "tree"), ("ref.tks", "skip")] {
        let reference = dir.path().join(name);
        tool("tkrzw_dbm_util", &["create", "--dbm", class, "--buckets", "101", s(&reference)]);
        tool("tkrzw_dbm_util", &["import", s(&reference), s(&flat)]);
        // The reference read back every record of our export.
        let got = tool("tkrzw_dbm_util", &["get", s(&reference), "apple"]).stdout;
        assert_eq!(got, b"red\n", "{class}");
        let mut found = contents(&reference);
        found.sort();
        assert_eq!(found, records(), "{class}: read by kuradb");
        // kura util works on it as on ours, read-only.
        assert_eq!(ok(&["get", s(&reference), "apple"]), b"red\n");
        let inspect = String::from_utf8(ok(&["inspect", s(&reference)])).unwrap();
        assert!(
            inspect.contains("read_only_reference_file: true") && inspect.contains("count: 258"),
            "{inspect}"
        );
        let listed = ok(&["list", "--items", "all", "--hex", s(&reference)]);
        assert_eq!(listed.iter().filter(|&&b| b == b'\n').count(), 258, "{class}");
        let out = kura(&["set", s(&reference), "apple", "green"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("opened read-only") && err.contains("kura util convert")
        );
        // Ordered files export the same bytes as the reference's own export.
        if class != "hash" {
            let theirs = dir.path().join(format!("{class}.theirs.flat"));
            tool("tkrzw_dbm_util", &["export", s(&reference), s(&theirs)]);
            let mine = dir.path().join(format!("{class}.mine.flat"));
            ok(&["export", "--flat", s(&reference), s(&mine)]);
            assert_eq!(std::fs::read(&theirs).unwrap(), std::fs::read(&mine).unwrap(), "{class}");
        }
        // Converted into the matching kuradb class, then by NEW's extension.
        let converted = dir.path().join(format!("conv-{class}.dat"));
        let said = String::from_utf8(ok(&["convert", s(&reference), s(&converted)])).unwrap();
        assert!(said.starts_with(&format!("258 records of {}", s(&reference))), "{said}");
        let db = PolyDbm::open(&converted, Access::ReadOnly, &Params::new()).unwrap();
        assert_eq!(db.class().name(), class);
        db.close().unwrap();
        let mut found = contents(&converted);
        found.sort();
        assert_eq!(found, records(), "{class}: converted");
        let as_tree = dir.path().join(format!("conv-{class}.kt"));
        ok(&["convert", s(&reference), s(&as_tree)]);
        assert_eq!(contents(&as_tree), records(), "{class} converted into a tree");
    }
}

#[test]
fn a_file_whose_writer_was_killed_converts_with_a_salvage_count() {
    if !have_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.tkh");
    let mut child = Command::new("tkrzw_dbm_perf")
        .args([
            "sequence",
            "--iter",
            "3000000",
            "--size",
            "8",
            "--set_only",
            "--buckets",
            "10000",
            "--path",
            s(&path),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap();
    if child.wait().unwrap().success() {
        eprintln!("the writer finished before it was killed: nothing to salvage");
        return;
    }
    let new = dir.path().join("saved.kh");
    let said = String::from_utf8(ok(&["convert", s(&path), s(&new)])).unwrap();
    let salvaged: u64 = said
        .split("salvaged ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no salvage count in {said:?}"));
    let db = PolyDbm::open(&new, Access::ReadOnly, &Params::new()).unwrap();
    assert_eq!(db.count().unwrap(), salvaged);
    assert!(salvaged > 0, "{said}");
    db.close().unwrap();
    // The reference's own restore keeps the same records.
    let restored = dir.path().join("restored.tkh");
    tool("tkrzw_dbm_util", &["restore", s(&path), s(&restored)]);
    let mut theirs = contents(&restored);
    let mut ours = contents(&new);
    theirs.sort();
    ours.sort();
    assert_eq!(ours, theirs);
}

#[test]
fn compressed_reference_files_list_get_export_and_convert() {
    if !have_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let flat = dir.path().join("in.flat");
    std::fs::write(
        &flat,
        records().iter().flat_map(|(k, v)| [flat_field(k), flat_field(v)].concat()).collect::<Vec<u8>>(),
    )
    .unwrap();
    for mode in ["zlib", "zstd", "lz4", "lzma"] {
        for (name, class) in [("c.tkh", "hash"), ("c.tkt", "tree")] {
            let what = format!("{class} {mode}");
            let reference = dir.path().join(format!("{mode}-{name}"));
            let create = ["create", "--dbm", class, "--buckets", "101", "--record_comp", mode, s(&reference)];
            tool("tkrzw_dbm_util", &create);
            tool("tkrzw_dbm_util", &["import", s(&reference), s(&flat)]);
            assert_eq!(ok(&["get", s(&reference), "apple"]), b"red\n", "{what}");
            let inspect = String::from_utf8(ok(&["inspect", s(&reference)])).unwrap();
            assert!(inspect.contains(&format!("record_comp_mode: {mode}")), "{what}: {inspect}");
            let listed = ok(&["list", "--items", "all", "--hex", s(&reference)]);
            assert_eq!(listed.iter().filter(|&&b| b == b'\n').count(), 258, "{what}");
            // Exported, the reference's own import reads the same records.
            let mine = dir.path().join(format!("{mode}-{class}.mine.flat"));
            ok(&["export", "--flat", s(&reference), s(&mine)]);
            let back = dir.path().join(format!("{mode}-{class}.back.tkh"));
            tool("tkrzw_dbm_util", &["create", "--dbm", "hash", "--buckets", "101", s(&back)]);
            tool("tkrzw_dbm_util", &["import", s(&back), s(&mine)]);
            let mut found = contents(&back);
            found.sort();
            assert_eq!(found, records(), "{what}: exported");
            // Converted, uncompressed and compressed as --record_comp says.
            for comp in [None, Some("lz4"), Some("lzma")] {
                let converted = dir.path().join(format!("{mode}-{class}-{comp:?}.kh"));
                let mut args = vec!["convert"];
                args.extend(comp.map(|c| ["--record_comp", c]).into_iter().flatten());
                args.extend([s(&reference), s(&converted)]);
                ok(&args);
                let inspect = String::from_utf8(ok(&["inspect", s(&converted)])).unwrap();
                let said = format!("record_comp_mode: {}", comp.unwrap_or("none"));
                assert!(inspect.contains(&said), "{what} converted with {comp:?}: {inspect}");
                let mut found = contents(&converted);
                found.sort();
                assert_eq!(found, records(), "{what}: converted with {comp:?}");
            }
        }
    }
}

/// One field of the reference's flat record format: 0xFF, the length as a
/// big-endian base-128 varint, the bytes.
fn flat_field(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0xff];
    kuradb::varint::base128::put(&mut out, data.len() as u64);
    out.extend_from_slice(data);
    out
}

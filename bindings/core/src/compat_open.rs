//! How the three reference-compatible layers open a database where the
//! reference and kuradb's own API disagree by default.
//!
//! - The reference waits for another process's file lock; kuradb's own API
//!   fails at once. A compat open waits unless the program says `no_wait`.
//! - The reference reads an existing tree's key order from its file and
//!   ignores a `key_comparator` parameter; kuradb's own API refuses one that
//!   differs from the file's. A compat open that reopens an existing tree
//!   without truncating it drops the parameter.
//! - The reference takes `no_create` as an option of the open; kuradb's
//!   databases create what is missing. A compat open with `no_create` of a
//!   path where neither a file nor a shard set exists answers NOT_FOUND, as
//!   the reference's open of a missing file does.

use std::path::Path;

use kuradb::dbm::class::DbmClass;
use kuradb::dbm::shard::ShardDbm;

use crate::params::reference_params;

/// The reference's open parameters as kuradb's ([`reference_params`]),
/// waiting for the file lock unless `no_wait` is given.
pub fn open_params<I, K, V>(pairs: I) -> kuradb::Result<Vec<(String, String)>>
where
    I: IntoIterator<Item = (K, V)>,
    K: Into<String>,
    V: Into<String>,
{
    let mut out = reference_params(pairs)?;
    if !out.iter().any(|(name, _)| name == "no_wait") {
        out.push(("no_wait".to_string(), "false".to_string()));
    }
    Ok(out)
}

/// Whether opening `path` with `params` reopens a tree that exists there
/// (a file with content, or a shard set) without emptying it.
pub fn reopens_tree(path: &Path, params: &[(String, String)]) -> bool {
    let value = |name: &str| params.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    let truncate = value("truncate").map(|v| v.trim().to_ascii_lowercase());
    if path.as_os_str().is_empty() || matches!(truncate.as_deref(), Some("true" | "1" | "yes" | "on")) {
        return false;
    }
    let has_file = std::fs::metadata(path).map(|m| m.is_file() && m.len() > 0).unwrap_or(false);
    if !has_file && !matches!(ShardDbm::existing_count(path), Ok(Some(_))) {
        return false;
    }
    let class = match value("dbm") {
        Some(name) => DbmClass::from_name(name).ok(),
        None if has_file => DbmClass::of_file(path).ok().flatten().or_else(|| DbmClass::from_extension(path)),
        None => DbmClass::from_extension(path),
    };
    class == Some(DbmClass::Tree)
}

/// The parameters of a compat layer's open of `path`: [`open_params`],
/// without `key_comparator` where the open [reopens a tree](reopens_tree).
pub fn compat_open_params<I, K, V>(path: &Path, pairs: I) -> kuradb::Result<Vec<(String, String)>>
where
    I: IntoIterator<Item = (K, V)>,
    K: Into<String>,
    V: Into<String>,
{
    let mut out = open_params(pairs)?;
    let mut no_create = false;
    for (name, value) in out.iter().filter(|(name, _)| name == "no_create") {
        no_create = flag(name, value)?;
    }
    out.retain(|(name, _)| name != "no_create");
    if no_create && !path.as_os_str().is_empty() && !exists(path) {
        return Err(kuradb::Error::new(
            kuradb::ErrorKind::NotFound,
            format!("no database at {}, and no_create was given", path.display()),
        ));
    }
    if reopens_tree(path, &out) {
        out.retain(|(name, _)| name != "key_comparator");
    }
    Ok(out)
}

/// Whether a file or a shard set is at `path`.
fn exists(path: &Path) -> bool {
    std::fs::metadata(path).is_ok() || matches!(ShardDbm::existing_count(path), Ok(Some(_)))
}

/// A true-or-false parameter, spelt as the reference's parameters may be.
fn flag(name: &str, value: &str) -> kuradb::Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" | "" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(kuradb::Error::new(
            kuradb::ErrorKind::InvalidArgument,
            format!("parameter {name} must be true or false, not {value:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuradb::dbm::poly::PolyDbm;
    use kuradb::dbm::Access;
    use kuradb::dbm::Dbm;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn an_open_waits_for_the_lock_unless_told_not_to() {
        let got = open_params(pairs(&[("num_buckets", "10")])).unwrap();
        assert_eq!(got, pairs(&[("num_buckets", "10"), ("no_wait", "false")]));
        let got = open_params(pairs(&[("no_wait", "true")])).unwrap();
        assert_eq!(got, pairs(&[("no_wait", "true")]));
        let rc4 = open_params(pairs(&[("record_comp_mode", "RECORD_COMP_RC4")]));
        assert_eq!(rc4.unwrap_err().kind(), kuradb::ErrorKind::InvalidArgument);
    }

    #[test]
    fn the_comparator_is_dropped_only_when_an_existing_tree_is_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("t.tkt");
        let name = tree.as_path();
        let cmp = [("key_comparator", "DecimalKeyComparator")];
        // A new file takes the comparator.
        assert!(!reopens_tree(name, &pairs(&cmp)));
        assert_eq!(compat_open_params(name, pairs(&cmp)).unwrap()[0], pairs(&cmp)[0]);
        let db = PolyDbm::open(&tree, Access::ReadWrite, &kuradb::Params::new()).unwrap();
        db.set(b"k", b"v").unwrap();
        db.close().unwrap();
        assert!(reopens_tree(name, &pairs(&cmp)));
        assert_eq!(compat_open_params(name, pairs(&cmp)).unwrap(), pairs(&[("no_wait", "false")]));
        // A truncating open makes a new tree, which takes it.
        assert!(!reopens_tree(name, &pairs(&[("truncate", "true")])));
        assert!(!reopens_tree(Path::new(""), &pairs(&cmp)));
        // The file's class counts, whatever its extension says.
        let renamed = dir.path().join("t.data");
        std::fs::copy(&tree, &renamed).unwrap();
        assert!(reopens_tree(&renamed, &[]));
        assert!(!reopens_tree(&renamed, &pairs(&[("dbm", "hash")])));
        let hash = dir.path().join("h.tkh");
        let db = PolyDbm::open(&hash, Access::ReadWrite, &kuradb::Params::new()).unwrap();
        db.close().unwrap();
        assert!(!reopens_tree(&hash, &[]));
    }

    #[test]
    fn an_existing_shard_set_of_trees_is_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.tkt");
        let name = path.as_path();
        let params = kuradb::Params::parse("num_shards=2").unwrap();
        PolyDbm::open(&path, Access::ReadWrite, &params).unwrap().close().unwrap();
        assert!(reopens_tree(name, &pairs(&[("num_shards", "2")])));
        assert!(!reopens_tree(name, &pairs(&[("num_shards", "2"), ("truncate", "1")])));
    }

    #[test]
    fn no_create_refuses_a_missing_database_and_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.tkh");
        let refused = compat_open_params(&path, pairs(&[("no_create", "true")]));
        assert_eq!(refused.unwrap_err().kind(), kuradb::ErrorKind::NotFound);
        let bad = compat_open_params(&path, pairs(&[("no_create", "maybe")]));
        assert_eq!(bad.unwrap_err().kind(), kuradb::ErrorKind::InvalidArgument);
        let created = compat_open_params(&path, pairs(&[("no_create", "false")])).unwrap();
        assert_eq!(created, pairs(&[("no_wait", "false")]));
        let memory = compat_open_params(Path::new(""), pairs(&[("no_create", "true")])).unwrap();
        assert_eq!(memory, pairs(&[("no_wait", "false")]));
        PolyDbm::open(&path, Access::ReadWrite, &kuradb::Params::new()).unwrap().close().unwrap();
        let existing = compat_open_params(&path, pairs(&[("no_create", "true")])).unwrap();
        assert_eq!(existing, pairs(&[("no_wait", "false")]));
        let shards = dir.path().join("s.tkh");
        PolyDbm::open(&shards, Access::ReadWrite, &kuradb::Params::parse("num_shards=2").unwrap())
            .unwrap()
            .close()
            .unwrap();
        assert!(compat_open_params(&shards, pairs(&[("no_create", "1")])).is_ok());
    }
}

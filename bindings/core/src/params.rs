//! The reference's open and rebuild parameters in kuradb's terms, for the
//! three compatible layers.
//!
//! A program written for the reference passes its parameters as its
//! language's keywords or map; the binding turns each value to text and
//! hands the pairs here. What comes back is what kuradb's `Params` take:
//!
//! - `concurrent` is dropped: a kuradb database is always thread-safe (a
//!   binding reads it first where it decides whether calls release the
//!   interpreter's lock);
//! - `access_options` separated by colons, as the reference writes them
//!   (`"padding:pagecache"`), are separated by `+`, as kuradb writes them;
//! - `record_comp_mode=RECORD_COMP_AES` with a `cipher_key` is kuradb's
//!   authenticated encryption (on whenever `cipher_key` is given), so the
//!   mode is dropped; `RECORD_COMP_RC4` is refused, as a broken cipher with
//!   no authentication, with an invalid-argument error a program already
//!   handles;
//! - a `max_page_size` below 64 is raised to 64, kuradb's smallest page:
//!   the reference takes it as a target that small pages only approach.
//! - `padding` in the `access_options` of a positional file without a
//!   `block_size` above 1 is dropped: the reference pads to a multiple of
//!   its block size, 1 unless given, which pads nothing;
//! - `lock_mem_buckets`, the reference's newer name for keeping a hash
//!   database's buckets in memory (it locks their pages), is kuradb's
//!   `cache_buckets`, which keeps a copy of them in the process's memory.
//!
//! A rebuild ([`rebuild_params`]) also drops the tuning of a running
//! database that the reference's rebuild accepts (`fbp_capacity`,
//! `min_read_size`, `cache_buckets`, `max_cached_pages`): kuradb writes none
//! of them into the file and takes them when the database is opened.

use kuradb::file::FileKind;
use kuradb::ErrorKind;

/// The parameters a binding reads itself and kuradb does not take.
const BINDING_ONLY: [&str; 1] = ["concurrent"];

/// kuradb's smallest `max_page_size`.
const LEAST_PAGE: u64 = 64;

/// The reference's open (or rebuild) parameters as kuradb's, in order.
pub fn reference_params<I, K, V>(pairs: I) -> kuradb::Result<Vec<(String, String)>>
where
    I: IntoIterator<Item = (K, V)>,
    K: Into<String>,
    V: Into<String>,
{
    let mut out: Vec<(String, String)> = Vec::new();
    let mut cipher = None;
    let mut has_key = false;
    for (name, value) in pairs {
        let (name, value) = (name.into(), value.into());
        match name.as_str() {
            n if BINDING_ONLY.contains(&n) => {}
            "access_options" => out.push((name, value.replace(':', "+"))),
            "lock_mem_buckets" => out.push(("cache_buckets".to_string(), value)),
            "record_comp_mode" => {
                let mode = value.trim().to_ascii_uppercase();
                let bare = mode.strip_prefix("RECORD_COMP_").unwrap_or(&mode).to_string();
                match bare.as_str() {
                    "RC4" => {
                        return Err(kuradb::Error::new(
                            ErrorKind::InvalidArgument,
                            "record_comp_mode RECORD_COMP_RC4 is refused: RC4 is a broken cipher, with no \
                             authentication; give RECORD_COMP_AES (kuradb's authenticated encryption, \
                             XChaCha20-Poly1305) with cipher_key",
                        ))
                    }
                    "AES" => cipher = Some(()),
                    _ => out.push((name, value)),
                }
            }
            "max_page_size" => match value.trim().parse::<u64>() {
                Ok(n) if n < LEAST_PAGE => out.push((name, LEAST_PAGE.to_string())),
                // Anything else (a bad number included) is kuradb's to judge.
                _ => out.push((name, value)),
            },
            _ => {
                if name == "cipher_key" && !value.is_empty() {
                    has_key = true;
                }
                out.push((name, value));
            }
        }
    }
    drop_unit_padding(&mut out);
    if cipher.is_some() && !has_key {
        return Err(kuradb::Error::new(
            ErrorKind::InvalidArgument,
            "record_comp_mode RECORD_COMP_AES needs a cipher_key",
        ));
    }
    Ok(out)
}

/// Drops `padding` from the `access_options` of a positional file given
/// no `block_size` above 1: the reference pads such a file to a multiple of
/// its block size, 1 unless given, which is no padding, where kuradb refuses
/// padding without block I/O rather than take a word that would do nothing.
/// (A memory-mapped file with `padding` is refused by both.)
fn drop_unit_padding(out: &mut [(String, String)]) {
    let last =
        |wanted: &str| out.iter().rev().find(|(name, _)| name == wanted).map(|(_, v)| v.trim().to_string());
    let positional = last("file").and_then(|f| FileKind::parse(&f).ok()).is_some_and(FileKind::is_positional);
    let unit_blocks = last("block_size").is_none_or(|b| b.parse::<u64>().is_ok_and(|n| n <= 1));
    if !positional || !unit_blocks {
        return;
    }
    for (_, value) in out.iter_mut().filter(|(name, _)| name == "access_options") {
        let kept: Vec<&str> =
            value.split('+').filter(|word| !word.trim().eq_ignore_ascii_case("padding")).collect();
        *value = kept.join("+");
    }
}

/// The tuning of a running database, which a kuradb rebuild does not take.
const RUNTIME_ONLY: [&str; 4] = ["fbp_capacity", "min_read_size", "cache_buckets", "max_cached_pages"];

/// The reference's rebuild parameters as kuradb's: [`reference_params`]
/// without the tuning of a running database.
pub fn rebuild_params<I, K, V>(pairs: I) -> kuradb::Result<Vec<(String, String)>>
where
    I: IntoIterator<Item = (K, V)>,
    K: Into<String>,
    V: Into<String>,
{
    let mut out = reference_params(pairs)?;
    out.retain(|(name, _)| !RUNTIME_ONLY.contains(&name.as_str()));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuradb::dbm::Access;

    #[test]
    fn lock_mem_buckets_keeps_the_buckets_in_memory() {
        let got = translated(&[("lock_mem_buckets", "true"), ("num_buckets", "10")]).unwrap();
        let want = [("cache_buckets", "true"), ("num_buckets", "10")];
        assert_eq!(got, want.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>());
        let rebuilt = rebuild_params([("lock_mem_buckets", "false")]).unwrap();
        assert!(rebuilt.is_empty(), "{rebuilt:?}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.tkh");
        let mut params = kuradb::Params::new();
        for (name, value) in translated(&[("lock_mem_buckets", "true")]).unwrap() {
            params.insert(&name, &value).unwrap();
        }
        let db = kuradb::dbm::poly::PolyDbm::open(&path, Access::ReadWrite, &params).unwrap();
        db.close().unwrap();
    }

    fn translated(pairs: &[(&str, &str)]) -> kuradb::Result<Vec<(String, String)>> {
        reference_params(pairs.iter().copied())
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn colons_become_pluses_and_binding_parameters_go() {
        let got = translated(&[
            ("concurrent", "true"),
            ("access_options", "padding:pagecache"),
            ("num_buckets", "10"),
        ]);
        assert_eq!(got.unwrap(), pairs(&[("access_options", "padding+pagecache"), ("num_buckets", "10")]));
    }

    #[test]
    fn aes_is_kuradbs_cipher_and_rc4_is_refused() {
        let got = translated(&[("record_comp_mode", "RECORD_COMP_AES"), ("cipher_key", "k")]).unwrap();
        assert_eq!(got, pairs(&[("cipher_key", "k")]));
        let got = translated(&[("record_comp_mode", "aes"), ("cipher_key", "k")]).unwrap();
        assert_eq!(got, pairs(&[("cipher_key", "k")]));
        assert_eq!(
            translated(&[("record_comp_mode", "RECORD_COMP_AES")]).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        let rc4 = translated(&[("record_comp_mode", "RECORD_COMP_RC4"), ("cipher_key", "k")]).unwrap_err();
        assert!(rc4.message().contains("RC4 is a broken cipher"), "{rc4}");
        let zstd = translated(&[("record_comp_mode", "RECORD_COMP_ZSTD")]).unwrap();
        assert_eq!(zstd, pairs(&[("record_comp_mode", "RECORD_COMP_ZSTD")]));
    }

    #[test]
    fn padding_without_block_io_is_dropped_as_the_references_pads_nothing() {
        let pos = ("file", "PositionalParallelFile");
        let got = translated(&[pos, ("access_options", "padding:direct")]).unwrap();
        assert_eq!(got, pairs(&[pos, ("access_options", "direct")]));
        let got =
            translated(&[("access_options", "padding"), ("block_size", "1"), ("file", "pos-atom")]).unwrap();
        assert_eq!(got, pairs(&[("access_options", ""), ("block_size", "1"), ("file", "pos-atom")]));
        let kept = translated(&[pos, ("access_options", "padding"), ("block_size", "512")]).unwrap();
        assert_eq!(kept, pairs(&[pos, ("access_options", "padding"), ("block_size", "512")]));
        // A bad block size is kuradb's to judge, with the padding it came with.
        let bad = translated(&[pos, ("block_size", "x"), ("access_options", "padding")]).unwrap();
        assert_eq!(bad, pairs(&[pos, ("block_size", "x"), ("access_options", "padding")]));
        // A memory-mapped file (the default) with padding is refused, as the reference's is.
        let mapped = translated(&[("access_options", "padding")]).unwrap();
        assert_eq!(mapped, pairs(&[("access_options", "padding")]));
        let dir = tempfile::tempdir().unwrap();
        let open = |list: &[(&str, &str)]| {
            let params: kuradb::Params = translated(list).unwrap().into_iter().collect();
            kuradb::dbm::poly::PolyDbm::open(dir.path().join("p.tkh"), Access::ReadWrite, &params)
        };
        open(&[pos, ("access_options", "padding")]).unwrap().close().unwrap();
        let refused = open(&[("access_options", "padding")]).err().expect("refused");
        assert_eq!(refused.kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn a_small_page_is_raised_to_the_least() {
        assert_eq!(translated(&[("max_page_size", "10")]).unwrap(), pairs(&[("max_page_size", "64")]));
        assert_eq!(translated(&[("max_page_size", "100")]).unwrap(), pairs(&[("max_page_size", "100")]));
        assert_eq!(translated(&[("max_page_size", "x")]).unwrap(), pairs(&[("max_page_size", "x")]));
    }

    #[test]
    fn a_rebuild_drops_the_running_tuning() {
        let got =
            rebuild_params(pairs(&[("fbp_capacity", "100"), ("num_buckets", "50"), ("min_read_size", "1")]));
        assert_eq!(got.unwrap(), pairs(&[("num_buckets", "50")]));
        let aes = rebuild_params(pairs(&[("fbp_capacity", "1"), ("record_comp_mode", "RECORD_COMP_AES")]));
        assert_eq!(aes.unwrap_err().kind(), ErrorKind::InvalidArgument);
        let dir = tempfile::tempdir().unwrap();
        let db = kuradb::dbm::poly::PolyDbm::open(
            dir.path().join("h.tkh"),
            Access::ReadWrite,
            &kuradb::Params::new(),
        )
        .unwrap();
        let params: kuradb::Params =
            rebuild_params(pairs(&[("fbp_capacity", "100")])).unwrap().into_iter().collect();
        kuradb::dbm::Dbm::rebuild_with_params(&db, &params).unwrap();
        db.close().unwrap();
    }

    #[test]
    fn translated_parameters_open_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tkt");
        let got = translated(&[
            ("file", "pos-para"),
            ("block_size", "512"),
            ("access_options", "padding:pagecache"),
            ("max_page_size", "32"),
        ]);
        let got = got.unwrap();
        let params: kuradb::Params = got.into_iter().collect();
        let db = kuradb::dbm::poly::PolyDbm::open(&path, Access::ReadWrite, &params).unwrap();
        db.close().unwrap();
    }
}

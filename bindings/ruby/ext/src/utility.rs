//! `Kuradb::Utility`: the reference's utility functions (`kuradb::utility`)
//! for Ruby; `Tkrzw::Utility` wraps them with the reference's names.

use magnus::prelude::*;
use magnus::{function, Error, RModule, RString, Ruby};

use crate::convert::bytes;
use crate::error::to_rb;

/// The reference's primary hash; `num_buckets` 0 is the whole 64-bit range.
fn primary_hash(data: RString, num_buckets: u64) -> u64 {
    kuradb::utility::primary_hash(&bytes(data), num_buckets)
}

/// The reference's secondary hash; `num_shards` 0 is the whole 64-bit range.
fn secondary_hash(data: RString, num_shards: u64) -> u64 {
    kuradb::utility::secondary_hash(&bytes(data), num_shards)
}

/// The Levenshtein distance of two strings: in Unicode characters with
/// `utf` (invalid UTF-8 counts as U+FFFD), else in bytes.
fn edit_distance_lev(a: RString, b: RString, utf: bool) -> usize {
    let (a, b) = (bytes(a), bytes(b));
    if utf {
        kuradb::utility::edit_distance_lev(&String::from_utf8_lossy(&a), &String::from_utf8_lossy(&b))
    } else {
        kuradb::utility::edit_distance_lev_bytes(&a, &b)
    }
}

/// The reference's rebuild parameters (pairs of name and text) as kuradb's,
/// by the binding core, for `Tkrzw`'s rebuilds.
fn rebuild_params(ruby: &Ruby, pairs: Vec<(String, String)>) -> Result<Vec<(String, String)>, Error> {
    kuradb_binding::params::rebuild_params(pairs).map_err(|e| to_rb(ruby, e))
}

/// The parameters of a `Tkrzw` open of `path` (pairs of name and text), by
/// the binding core: translated, waiting for the lock unless `no_wait`,
/// without `key_comparator` when the open reopens an existing tree.
fn compat_open_params(
    ruby: &Ruby,
    path: String,
    pairs: Vec<(String, String)>,
) -> Result<Vec<(String, String)>, Error> {
    kuradb_binding::compat_open::compat_open_params(std::path::Path::new(&path), pairs)
        .map_err(|e| to_rb(ruby, e))
}

/// An integer as the reference's 8 big-endian bytes (binary encoding).
fn serialize_int(ruby: &Ruby, num: i64) -> RString {
    ruby.str_from_slice(&kuradb_binding::serialize::serialize_int(num))
}

/// The integer of a big-endian sequence, as the reference reads it.
fn deserialize_int(data: RString) -> i64 {
    kuradb_binding::serialize::deserialize_int(&bytes(data))
}

/// A floating-point number as the reference's 8 big-endian bytes.
fn serialize_float(ruby: &Ruby, num: f64) -> RString {
    ruby.str_from_slice(&kuradb_binding::serialize::serialize_float(num))
}

/// The number of a big-endian IEEE single or double (else NaN).
fn deserialize_float(data: RString) -> f64 {
    kuradb_binding::serialize::deserialize_float(&bytes(data))
}

/// Defines `Kuradb::Utility` and its functions.
pub fn define(_ruby: &Ruby, module: RModule) -> Result<(), Error> {
    module.define_module_function("_rebuild_params", function!(rebuild_params, 1))?;
    module.define_module_function("_compat_open_params", function!(compat_open_params, 2))?;
    let utility = module.define_module("Utility")?;
    utility.define_singleton_method("primary_hash", function!(primary_hash, 2))?;
    utility.define_singleton_method("secondary_hash", function!(secondary_hash, 2))?;
    utility.define_singleton_method("edit_distance_lev", function!(edit_distance_lev, 3))?;
    utility.define_singleton_method("serialize_int", function!(serialize_int, 1))?;
    utility.define_singleton_method("deserialize_int", function!(deserialize_int, 1))?;
    utility.define_singleton_method("serialize_float", function!(serialize_float, 1))?;
    utility.define_singleton_method("deserialize_float", function!(deserialize_float, 1))?;
    utility.define_singleton_method("memory_usage", function!(kuradb::utility::memory_usage, 0))?;
    utility.define_singleton_method("memory_capacity", function!(kuradb::utility::memory_capacity, 0))?;
    utility.const_set("CORE_VERSION", kuradb::utility::VERSION)?;
    Ok(())
}

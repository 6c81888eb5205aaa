//! The natives of the reference's `Utility`: its hash functions, edit
//! distance and memory figures, from `kuradb::utility`.

use jni::objects::{JByteArray, JObjectArray, JString};
use jni::sys::{jdouble, jint, jlong};
use jni::Env;
use kuradb::utility;
use kuradb_binding::compat_open::compat_open_params;
use kuradb_binding::params::rebuild_params;

use crate::convert::{bytes, new_strings, string};
use crate::throw::{check, native, JResult};

native! {
    /// kuradb's version.
    fn Java_io_kuradb_Native_version(env) -> JString<'l> {
        env.new_string(utility::VERSION)
    }
}

native! {
    /// The reference's primary hash of `data` modulo `num_buckets` (0: the full range).
    fn Java_io_kuradb_Native_primaryHash(env, data: JByteArray<'l>, num_buckets: jlong) -> jlong {
        let data = bytes(env, &data, "the data")?;
        Ok(utility::primary_hash(&data, num_buckets as u64) as jlong)
    }
}

native! {
    /// The reference's secondary hash of `data` modulo `num_shards` (0: the full range).
    fn Java_io_kuradb_Native_secondaryHash(env, data: JByteArray<'l>, num_shards: jlong) -> jlong {
        let data = bytes(env, &data, "the data")?;
        Ok(utility::secondary_hash(&data, num_shards as u64) as jlong)
    }
}

native! {
    /// The Levenshtein distance of two strings, over Unicode characters.
    fn Java_io_kuradb_Native_editDistanceLev(env, a: JString<'l>, b: JString<'l>) -> jint {
        let a = string(env, &a, "the first string")?;
        let b = string(env, &b, "the second string")?;
        Ok(i32::try_from(utility::edit_distance_lev(&a, &b)).unwrap_or(i32::MAX))
    }
}

native! {
    /// The process's resident memory in bytes.
    fn Java_io_kuradb_Native_memoryUsage(_env) -> jlong {
        Ok(i64::try_from(utility::memory_usage()).unwrap_or(i64::MAX))
    }
}

native! {
    /// The machine's total memory in bytes.
    fn Java_io_kuradb_Native_memoryCapacity(_env) -> jlong {
        Ok(i64::try_from(utility::memory_capacity()).unwrap_or(i64::MAX))
    }
}

native! {
    /// The reference's rebuild parameters (name, value, name, value, ...)
    /// as kuradb's, in the same flat form (the binding core's
    /// translation); throws INVALID_ARGUMENT for a refused one (RC4).
    fn Java_io_kuradb_Native_rebuildParams(env, pairs: JObjectArray<'l, JString<'l>>) -> JObjectArray<'l, JString<'l>> {
        let read = read_pairs(env, &pairs)?;
        let translated = check(env, rebuild_params(read))?;
        flat_pairs(env, translated)
    }
}

native! {
    /// The parameters of a compat open of `path` (the binding core's
    /// [`compat_open_params`]: translated, waiting for the lock unless
    /// `no_wait`, without `key_comparator` when reopening a tree), flat.
    fn Java_io_kuradb_Native_compatOpenParams(env, path: JString<'l>, pairs: JObjectArray<'l, JString<'l>>) -> JObjectArray<'l, JString<'l>> {
        let path = string(env, &path, "the path")?;
        let read = read_pairs(env, &pairs)?;
        let translated = check(env, compat_open_params(std::path::Path::new(&path), read))?;
        flat_pairs(env, translated)
    }
}

/// The pairs of a flat array (name, value, ...); null is none.
fn read_pairs(env: &mut Env<'_>, pairs: &JObjectArray<'_, JString<'_>>) -> JResult<Vec<(String, String)>> {
    let mut read = Vec::new();
    let len = if pairs.is_null() { 0 } else { pairs.len(env)? };
    let mut i = 0;
    while i + 1 < len {
        let name = pairs.get_element(env, i)?;
        let value = pairs.get_element(env, i + 1)?;
        read.push((string(env, &name, "a parameter's name")?, string(env, &value, "a parameter's value")?));
        i += 2;
    }
    Ok(read)
}

/// Pairs as a flat Java array.
fn flat_pairs<'l>(env: &mut Env<'l>, pairs: Vec<(String, String)>) -> JResult<JObjectArray<'l, JString<'l>>> {
    let flat: Vec<String> = pairs.into_iter().flat_map(|(k, v)| [k, v]).collect();
    new_strings(env, &flat)
}

native! {
    /// An integer as the reference's 8 big-endian bytes.
    fn Java_io_kuradb_Native_serializeInt(env, num: jlong) -> JByteArray<'l> {
        env.byte_array_from_slice(&kuradb_binding::serialize::serialize_int(num))
    }
}

native! {
    /// The integer of a big-endian sequence, as the reference reads it.
    fn Java_io_kuradb_Native_deserializeInt(env, data: JByteArray<'l>) -> jlong {
        let data = bytes(env, &data, "the data")?;
        Ok(kuradb_binding::serialize::deserialize_int(&data))
    }
}

native! {
    /// A floating-point number as the reference's 8 big-endian bytes.
    fn Java_io_kuradb_Native_serializeFloat(env, num: jdouble) -> JByteArray<'l> {
        env.byte_array_from_slice(&kuradb_binding::serialize::serialize_float(num))
    }
}

native! {
    /// The number of a big-endian IEEE single or double (else NaN).
    fn Java_io_kuradb_Native_deserializeFloat(env, data: JByteArray<'l>) -> jdouble {
        let data = bytes(env, &data, "the data")?;
        Ok(kuradb_binding::serialize::deserialize_float(&data))
    }
}

native! {
    /// The size of a memory page.
    fn Java_io_kuradb_Native_pageSize(_env) -> jlong {
        Ok(i64::try_from(kuradb_binding::utility::page_size()).unwrap_or(i64::MAX))
    }
}

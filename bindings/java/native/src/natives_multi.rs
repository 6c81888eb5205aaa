//! The natives over several records: the multi forms, rekey, export and
//! import, restore.

use std::borrow::Cow;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;

use jni::objects::{JByteArray, JObject, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong};
use kuradb::dbm::flat_records::{export_keys_as_lines, export_to_flat_records, import_from_flat_records};
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Access, Action, Dbm};
use kuradb::ErrorKind;

use crate::callback::Callback;
use crate::convert::{byte_arrays, bytes, keys, new_byte_arrays, null_argument, params, string};
use crate::handle::{object, Database};
use crate::throw::{check, fail, native};

native! {
    /// The values of `keys`, in order (null where absent).
    fn Java_io_kuradb_Native_getMulti(env, handle: jlong, keys_array: JObjectArray<'l, JByteArray<'l>>) -> JObjectArray<'l, JByteArray<'l>> {
        let keys = keys(env, &keys_array, "a key")?;
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let values = object::<Database>(env, handle)?.with(env, |env, db| check(env, db.get_multi(&refs)))?;
        new_byte_arrays(env, values.iter().map(Option::as_deref))
    }
}

native! {
    /// Stores every pair atomically; answers false, changing nothing, where
    /// a key exists and `overwrite` is false.
    fn Java_io_kuradb_Native_setMulti(
        env, handle: jlong, keys_array: JObjectArray<'l, JByteArray<'l>>, values_array: JObjectArray<'l, JByteArray<'l>>, overwrite: jboolean
    ) -> jboolean {
        let keys = keys(env, &keys_array, "a key")?;
        let values = keys_of_values(env, &values_array, keys.len())?;
        let pairs: Vec<(&[u8], &[u8])> = keys.iter().map(Vec::as_slice).zip(values.iter().map(Vec::as_slice)).collect();
        object::<Database>(env, handle)?.with(env, |env, db| match if overwrite { db.set_multi(&pairs) } else { db.insert_multi(&pairs) } {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::Duplication && !overwrite => Ok(false),
            Err(e) => check(env, Err(e)),
        })
    }
}

/// The values of a multi call, as many as the keys.
pub(crate) fn keys_of_values(
    env: &mut jni::Env<'_>,
    values: &JObjectArray<'_, JByteArray<'_>>,
    count: usize,
) -> crate::throw::JResult<Vec<Vec<u8>>> {
    let values = keys(env, values, "a value")?;
    if values.len() != count {
        return fail(env, ErrorKind::InvalidArgument, "there must be as many values as keys");
    }
    Ok(values)
}

native! {
    /// Removes every key atomically; answers how many existed.
    fn Java_io_kuradb_Native_removeMulti(env, handle: jlong, keys_array: JObjectArray<'l, JByteArray<'l>>) -> jint {
        let keys = keys(env, &keys_array, "a key")?;
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let n = object::<Database>(env, handle)?.with(env, |env, db| check(env, db.remove_multi(&refs)))?;
        Ok(i32::try_from(n).unwrap_or(i32::MAX))
    }
}

native! {
    /// Appends to several records atomically.
    fn Java_io_kuradb_Native_appendMulti(
        env, handle: jlong, keys_array: JObjectArray<'l, JByteArray<'l>>, values_array: JObjectArray<'l, JByteArray<'l>>, delimiter: JByteArray<'l>
    ) -> () {
        let keys = keys(env, &keys_array, "a key")?;
        let values = keys_of_values(env, &values_array, keys.len())?;
        let delimiter = bytes(env, &delimiter, "the delimiter")?;
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        object::<Database>(env, handle)?.with(env, |env, db| {
            let done = db.process_multi(&refs, Access::ReadWrite, &mut |i, _, old| match old {
                None => Action::set(&values[i]),
                Some(old) => Action::Set(Cow::Owned([old, &delimiter, &values[i]].concat())),
            });
            check(env, done)
        })
    }
}

native! {
    /// If every expected pair holds (null value: absent; `any` marker: any
    /// value), applies every desired pair (null: remove), atomically.
    fn Java_io_kuradb_Native_compareExchangeMulti(
        env, handle: jlong, expected_keys: JObjectArray<'l, JByteArray<'l>>, expected_values: JObjectArray<'l, JByteArray<'l>>,
        any: JObject<'l>, desired_keys: JObjectArray<'l, JByteArray<'l>>, desired_values: JObjectArray<'l, JByteArray<'l>>
    ) -> jboolean {
        let ekeys = keys(env, &expected_keys, "an expected key")?;
        let dkeys = keys(env, &desired_keys, "a desired key")?;
        let mut evalues = Vec::with_capacity(ekeys.len());
        let len = expected_values.len(env)?;
        for i in 0..len {
            let element = expected_values.get_element(env, i)?;
            let is_any = !element.is_null() && env.is_same_object(&element, &any)?;
            evalues.push(if is_any { Err(()) } else { Ok(crate::convert::opt_bytes(env, &element)?) });
        }
        let dvalues = byte_arrays(env, &desired_values, "the desired values")?;
        if evalues.len() != ekeys.len() || dvalues.len() != dkeys.len() {
            return fail(env, ErrorKind::InvalidArgument, "there must be as many values as keys");
        }
        let all: Vec<&[u8]> = ekeys.iter().chain(&dkeys).map(Vec::as_slice).collect();
        object::<Database>(env, handle)?.with(env, |env, db| {
            let mut matched = true;
            let done = db.process_multi(&all, Access::ReadWrite, &mut |i, _, value| {
                if i < ekeys.len() {
                    matched &= match &evalues[i] {
                        Err(()) => value.is_some(),
                        Ok(expected) => value == expected.as_deref(),
                    };
                    return Action::Keep;
                }
                match (matched, &dvalues[i - ekeys.len()]) {
                    (false, _) => Action::Keep,
                    (true, Some(v)) => Action::set(v),
                    (true, None) => Action::Remove,
                }
            });
            check(env, done)?;
            Ok(matched)
        })
    }
}

native! {
    /// Shows Java's callback each key's record (with its index), atomically.
    fn Java_io_kuradb_Native_processMulti(
        env, handle: jlong, keys_array: JObjectArray<'l, JByteArray<'l>>, callback: JObject<'l>, remove: JObject<'l>, writable: jboolean
    ) -> () {
        let keys = keys(env, &keys_array, "a key")?;
        if callback.is_null() {
            return null_argument(env, "the processor");
        }
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let database: &Database = object(env, handle)?;
        database.with(env, |env, db| {
            let mut callback = Callback::new(&callback, &remove);
            let result = database.as_callback(|| db.process_multi(&refs, if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly }, &mut |i, key, value| callback.call(env, i, key, value)));
            callback.finish(Ok(()))?;
            check(env, result)
        })
    }
}

native! {
    /// Moves (or copies) a record to a new key.
    fn Java_io_kuradb_Native_rekey(env, handle: jlong, old_key: JByteArray<'l>, new_key: JByteArray<'l>, overwrite: jboolean, copying: jboolean) -> () {
        let old_key = bytes(env, &old_key, "the old key")?;
        let new_key = bytes(env, &new_key, "the new key")?;
        object::<Database>(env, handle)?.with(env, |env, db| check(env, db.rekey(&old_key, &new_key, if copying { kuradb::dbm::Rekey::Copy } else { kuradb::dbm::Rekey::Move }, if overwrite { kuradb::dbm::OnDuplicate::Replace } else { kuradb::dbm::OnDuplicate::Fail })))
    }
}

native! {
    /// Copies every record into the database of `dest`.
    fn Java_io_kuradb_Native_export(env, handle: jlong, dest: jlong) -> () {
        let dest_database: &Database = object(env, dest)?;
        let source: &Database = object(env, handle)?;
        if std::ptr::eq(dest_database, source) {
            return fail(env, ErrorKind::InvalidArgument, "a database cannot be exported into itself");
        }
        dest_database.with(env, |env, dest_db| {
            source.with(env, |env, db| check(env, db.export(&**dest_db)))
        })
    }
}

native! {
    /// Writes every record to the flat-record file at `path` (replaced);
    /// with `keys_only`, every key as a line of text instead.
    fn Java_io_kuradb_Native_exportToFile(env, handle: jlong, path: JString<'l>, keys_only: jboolean) -> () {
        let path = string(env, &path, "the path")?;
        object::<Database>(env, handle)?.with(env, |env, db| {
            let written = write_file(Path::new(&path), |out| {
                if keys_only {
                    export_keys_as_lines(&**db, out)
                } else {
                    export_to_flat_records(&**db, out)
                }
            });
            check(env, written)
        })
    }
}

/// Writes a new file at `path` with `write`, flushed before it answers.
fn write_file(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<std::fs::File>) -> kuradb::Result<()>,
) -> kuradb::Result<()> {
    let file = std::fs::File::create(path).map_err(|e| kuradb::Error::io("creating", path, e))?;
    let mut out = BufWriter::new(file);
    write(&mut out)?;
    out.flush().map_err(|e| kuradb::Error::io("writing", path, e))
}

native! {
    /// Sets every record of the flat-record file at `path`; answers how many.
    fn Java_io_kuradb_Native_importFromFile(env, handle: jlong, path: JString<'l>) -> jlong {
        let path = string(env, &path, "the path")?;
        let n = object::<Database>(env, handle)?.with(env, |env, db| {
            let read = std::fs::File::open(&path)
                .map_err(|e| kuradb::Error::io("opening", Path::new(&path), e))
                .and_then(|file| import_from_flat_records(&**db, &mut BufReader::new(file)));
            check(env, read)
        })?;
        Ok(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

native! {
    /// Rebuilds a damaged database file at `src` into a new one at `dest`;
    /// answers how many records it saved.
    fn Java_io_kuradb_Native_restore(env, src: JString<'l>, dest: JString<'l>, pairs: JObjectArray<'l, JString<'l>>) -> jlong {
        let src = string(env, &src, "the damaged file's path")?;
        let dest = string(env, &dest, "the new file's path")?;
        let params = params(env, &pairs)?;
        let n = PolyDbm::restore(&src, &dest, &params);
        let n = check(env, n)?;
        Ok(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

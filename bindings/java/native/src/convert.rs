//! Java values to Rust and back: byte arrays, arrays of them, strings.

use jni::objects::{JByteArray, JObjectArray, JString};
use jni::Env;
use kuradb::Params;

use crate::throw::{check, JResult};

/// The bytes of a Java `byte[]`; a null array throws, naming `what`.
pub fn bytes(env: &mut Env<'_>, array: &JByteArray<'_>, what: &str) -> JResult<Vec<u8>> {
    if array.is_null() {
        return null_argument(env, what);
    }
    env.convert_byte_array(array)
}

/// The bytes of a Java `byte[]` that may be null.
pub fn opt_bytes(env: &mut Env<'_>, array: &JByteArray<'_>) -> JResult<Option<Vec<u8>>> {
    if array.is_null() {
        return Ok(None);
    }
    env.convert_byte_array(array).map(Some)
}

/// A new Java `byte[]`, or null for `None`.
pub fn new_bytes<'l>(env: &mut Env<'l>, data: Option<&[u8]>) -> JResult<JByteArray<'l>> {
    match data {
        Some(d) => env.byte_array_from_slice(d),
        None => Ok(JByteArray::default()),
    }
}

/// The elements of a Java `byte[][]`; null elements stay `None`.
pub fn byte_arrays(
    env: &mut Env<'_>,
    array: &JObjectArray<'_, JByteArray<'_>>,
    what: &str,
) -> JResult<Vec<Option<Vec<u8>>>> {
    if array.is_null() {
        return null_argument(env, what);
    }
    let len = array.len(env)?;
    let mut out = Vec::with_capacity(len);
    for i in 0..len {
        let element = array.get_element(env, i)?;
        out.push(opt_bytes(env, &element)?);
        env.delete_local_ref(element);
    }
    Ok(out)
}

/// The elements of a Java `byte[][]`, none of which may be null.
pub fn keys(
    env: &mut Env<'_>,
    array: &JObjectArray<'_, JByteArray<'_>>,
    what: &str,
) -> JResult<Vec<Vec<u8>>> {
    let all = byte_arrays(env, array, what)?;
    if all.iter().any(Option::is_none) {
        return null_argument(env, what);
    }
    Ok(all.into_iter().flatten().collect())
}

/// A new Java `byte[][]` of `items` (null for `None`).
pub fn new_byte_arrays<'l, 'a>(
    env: &mut Env<'l>,
    items: impl ExactSizeIterator<Item = Option<&'a [u8]>>,
) -> JResult<JObjectArray<'l, JByteArray<'l>>> {
    let array = JObjectArray::<JByteArray>::new(env, items.len(), JByteArray::default())?;
    for (i, item) in items.enumerate() {
        if let Some(data) = item {
            let element = env.byte_array_from_slice(data)?;
            array.set_element(env, i, &element)?;
            env.delete_local_ref(element);
        }
    }
    Ok(array)
}

/// A new Java `String[]` of `items`.
pub fn new_strings<'l>(env: &mut Env<'l>, items: &[String]) -> JResult<JObjectArray<'l, JString<'l>>> {
    let array = JObjectArray::<JString>::new(env, items.len(), JString::default())?;
    for (i, item) in items.iter().enumerate() {
        let element = env.new_string(item)?;
        array.set_element(env, i, &element)?;
        env.delete_local_ref(element);
    }
    Ok(array)
}

/// The text of a Java `String`; null throws, naming `what`.
pub fn string(env: &mut Env<'_>, text: &JString<'_>, what: &str) -> JResult<String> {
    if text.is_null() {
        return null_argument(env, what);
    }
    text.try_to_string(env)
}

/// Parameters from a Java `String[]` of names and values in turn (null: none).
pub fn params(env: &mut Env<'_>, pairs: &JObjectArray<'_, JString<'_>>) -> JResult<Params> {
    let mut params = Params::new();
    if pairs.is_null() {
        return Ok(params);
    }
    let len = pairs.len(env)?;
    let mut i = 0;
    while i + 1 < len {
        let name = pairs.get_element(env, i)?;
        let value = pairs.get_element(env, i + 1)?;
        let name = string(env, &name, "a parameter's name")?;
        let value = string(env, &value, "a parameter's value")?;
        let inserted = params.insert(&name, &value);
        check(env, inserted)?;
        i += 2;
    }
    Ok(params)
}

/// Throws the error of a null argument.
pub fn null_argument<T>(env: &mut Env<'_>, what: &str) -> JResult<T> {
    // NullPointerException is what Java code expects of a null argument.
    let message = format!("{what} is null");
    let _ = env
        .throw_new(jni::jni_str!("java/lang/NullPointerException"), jni::strings::JNIString::from(message));
    Err(jni::errors::Error::JavaException)
}

//! Synchronizing with the reference's parameters, for `DBM.synchronize`:
//! the binding core's [`synchronize_with`].

use jni::objects::{JObjectArray, JString};
use jni::sys::{jboolean, jlong};
pub use kuradb_binding::synchronize::synchronize_with;

use crate::convert::params;
use crate::handle::{object, Database};
use crate::throw::{check, native};

native! {
    /// Synchronizes with the reference's parameters (see [`synchronize_with`]).
    fn Java_io_kuradb_Native_synchronizeWith(env, handle: jlong, hard: jboolean, pairs: JObjectArray<'l, JString<'l>>) -> () {
        let params = params(env, &pairs)?;
        object::<Database>(env, handle)?.with(env, |env, db| check(env, synchronize_with(db, hard, &params)))
    }
}

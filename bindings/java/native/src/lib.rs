//! The Java binding of kuradb: the JNI library behind `bindings/java`'s jar.
//!
//! Every native method is a static method of the Java class `io.kuradb.Native`
//! and takes or answers only primitives, strings, `byte[]` and `byte[][]`: the
//! Java classes (`io.kuradb.Dbm`, its cursor, and the reference's API in the
//! `tkrzw` package) are written in Java on top. Keeping the native surface
//! that narrow keeps the unsafe part small: the only `unsafe` code turns the
//! `long` handles Java holds back into the Rust objects they point at
//! ([`handle`]).
//!
//! Every native method runs inside `EnvUnowned::with_env`, which catches Rust
//! panics; a panic becomes a `java.lang.RuntimeException`, and a kuradb error
//! an `io.kuradb.KuraException` carrying the error's kind and the
//! reference's status code of it ([`throw`]). What the three bindings share
//! (the open handle, the live cursor, the status codes, the reference's
//! parameters, the future) is the binding core's, `kuradb-binding`.

#![deny(unsafe_code)]

mod callback;
mod convert;
mod file_object;
mod future;
mod handle;
mod natives_async;
mod natives_cursor;
mod natives_dbm;
mod natives_expiry;
mod natives_file;
mod natives_index;
mod natives_multi;
mod natives_txn;
mod natives_utility;
mod shared;
mod synchronize;
mod throw;

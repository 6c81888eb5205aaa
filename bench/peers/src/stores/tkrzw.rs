//! The reference, Tkrzw, through its C library (`libtkrzw`, the interface
//! of `tkrzw_langc.h`), as a C program would use it: a `PolyDBM` of a hash
//! or tree file with the default tuning, a set then a hard synchronization
//! for durability. Built only where `build.rs` finds the library; without
//! it the reference's columns run its benchmark program instead
//! (`reference.rs`).

use std::ffi::{c_char, c_void, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::engine::BoxError;
use crate::store::{Pair, Reader, Store};

/// The C interface's opaque handles.
#[repr(C)]
struct TkrzwDbm {
    _private: [u8; 0],
}

#[repr(C)]
struct TkrzwIter {
    _private: [u8; 0],
}

/// A record processor: the argument, the key, its size, the value (null if
/// absent), its size, and where a new value's size would go.
type Processor =
    extern "C" fn(*mut c_void, *const c_char, i32, *const c_char, i32, *mut i32) -> *const c_char;

#[link(name = "tkrzw")]
extern "C" {
    static TKRZW_PACKAGE_VERSION: *const c_char;
    static TKRZW_LIBRARY_VERSION: *const c_char;
    static TKRZW_REC_PROC_NOOP: *const c_char;
    fn tkrzw_get_last_status_code() -> i32;
    fn tkrzw_get_last_status_message() -> *const c_char;
    fn tkrzw_status_code_name(code: i32) -> *const c_char;
    fn tkrzw_dbm_open(path: *const c_char, writable: bool, params: *const c_char) -> *mut TkrzwDbm;
    fn tkrzw_dbm_close(dbm: *mut TkrzwDbm) -> bool;
    fn tkrzw_dbm_get(
        dbm: *mut TkrzwDbm,
        key: *const c_char,
        key_size: i32,
        value_size: *mut i32,
    ) -> *mut c_char;
    fn tkrzw_dbm_set(
        dbm: *mut TkrzwDbm,
        key: *const c_char,
        key_size: i32,
        value: *const c_char,
        value_size: i32,
        overwrite: bool,
    ) -> bool;
    fn tkrzw_dbm_remove(dbm: *mut TkrzwDbm, key: *const c_char, key_size: i32) -> bool;
    fn tkrzw_dbm_count(dbm: *mut TkrzwDbm) -> i64;
    fn tkrzw_dbm_rebuild(dbm: *mut TkrzwDbm, params: *const c_char) -> bool;
    fn tkrzw_dbm_synchronize(
        dbm: *mut TkrzwDbm,
        hard: bool,
        proc: *const c_void,
        proc_arg: *mut c_void,
        params: *const c_char,
    ) -> bool;
    fn tkrzw_dbm_make_iterator(dbm: *mut TkrzwDbm) -> *mut TkrzwIter;
    fn tkrzw_dbm_iter_free(iter: *mut TkrzwIter);
    fn tkrzw_dbm_iter_first(iter: *mut TkrzwIter) -> bool;
    fn tkrzw_dbm_iter_jump(iter: *mut TkrzwIter, key: *const c_char, key_size: i32) -> bool;
    fn tkrzw_dbm_iter_next(iter: *mut TkrzwIter) -> bool;
    fn tkrzw_dbm_iter_process(
        iter: *mut TkrzwIter,
        proc: Processor,
        arg: *mut c_void,
        writable: bool,
    ) -> bool;
}

/// `TKRZW_STATUS_NOT_FOUND_ERROR` of `tkrzw_langc.h`.
const NOT_FOUND_ERROR: i32 = 7;

/// The library's version, as `tkrzw_langc.h` reports it: "1.0.25 (library
/// 1.68.0)".
pub fn version() -> String {
    // SAFETY: both are static NUL-terminated strings of the library,
    // valid for the whole process.
    unsafe {
        format!(
            "{} (library {})",
            CStr::from_ptr(TKRZW_PACKAGE_VERSION).to_string_lossy(),
            CStr::from_ptr(TKRZW_LIBRARY_VERSION).to_string_lossy()
        )
    }
}

/// The last failure's message on this thread, with what was being done.
fn failure(what: &str) -> BoxError {
    // SAFETY: the library keeps the last status per thread; the message
    // stays valid until the next status call on this thread, and is
    // copied out at once; a code's name is a static string.
    let (name, message) = unsafe {
        let code = tkrzw_get_last_status_code();
        let name = CStr::from_ptr(tkrzw_status_code_name(code)).to_string_lossy().into_owned();
        (name, CStr::from_ptr(tkrzw_get_last_status_message()).to_string_lossy().into_owned())
    };
    format!("tkrzw: {what}: {name}: {message}").into()
}

/// A length as the C interface takes it.
fn size(bytes: &[u8]) -> Result<i32, BoxError> {
    i32::try_from(bytes.len())
        .map_err(|_| format!("tkrzw: {} bytes do not fit its i32 sizes", bytes.len()).into())
}

/// An open Tkrzw database.
pub struct Tkrzw {
    dbm: *mut TkrzwDbm,
    /// A tree: its iterators walk in key order (a hash's, in bucket order).
    ordered: bool,
}

// SAFETY: every DBM class of Tkrzw is thread-safe (its documentation says
// so of all of them): any thread may call any function on one handle, and
// the handle is closed only by `close`, which takes the store by value.
unsafe impl Send for Tkrzw {}
// SAFETY: as above.
unsafe impl Sync for Tkrzw {}

impl Tkrzw {
    /// Makes a fresh database at `path`, of the class its extension names
    /// (`.tkh` a hash, `.tkt` a tree), with the default tuning.
    pub fn open(path: &Path) -> Result<Tkrzw, BoxError> {
        let ordered = path.extension().is_some_and(|e| e == "tkt");
        let c_path = CString::new(path.as_os_str().as_bytes())?;
        let params = CString::new("truncate=true")?;
        // SAFETY: both strings are NUL-terminated and outlive the call.
        let dbm = unsafe { tkrzw_dbm_open(c_path.as_ptr(), true, params.as_ptr()) };
        if dbm.is_null() {
            return Err(failure(&format!("opening {}", path.display())));
        }
        Ok(Tkrzw { dbm, ordered })
    }

    fn synchronize(&self, hard: bool) -> Result<(), BoxError> {
        // SAFETY: a live handle; no processor, and empty parameters.
        if unsafe {
            tkrzw_dbm_synchronize(self.dbm, hard, std::ptr::null(), std::ptr::null_mut(), c"".as_ptr())
        } {
            Ok(())
        } else {
            Err(failure("synchronizing"))
        }
    }
}

impl Store for Tkrzw {
    fn write(&mut self, pairs: &mut dyn Iterator<Item = Pair>, durable: bool) -> Result<(), BoxError> {
        for (key, value) in pairs {
            let (key_size, value_size) = (size(&key)?, size(&value)?);
            // SAFETY: a live handle; the slices outlive the call, which
            // copies them.
            let done = unsafe {
                tkrzw_dbm_set(
                    self.dbm,
                    key.as_ptr().cast(),
                    key_size,
                    value.as_ptr().cast(),
                    value_size,
                    true,
                )
            };
            if !done {
                return Err(failure("setting a record"));
            }
        }
        if durable {
            self.synchronize(true)?;
        }
        Ok(())
    }

    fn remove(&mut self, keys: &mut dyn Iterator<Item = Vec<u8>>, durable: bool) -> Result<(), BoxError> {
        for key in keys {
            // SAFETY: a live handle; the key outlives the call; then this
            // thread's last status.
            let removed = unsafe { tkrzw_dbm_remove(self.dbm, key.as_ptr().cast(), size(&key)?) };
            // A key removed before (the seeds draw some twice) is no failure.
            if !removed && unsafe { tkrzw_get_last_status_code() } != NOT_FOUND_ERROR {
                return Err(failure("removing a record"));
            }
        }
        if durable {
            self.synchronize(true)?;
        }
        Ok(())
    }

    fn write_out(&self) -> Result<(), BoxError> {
        // A tree keeps changed pages in its cache until a synchronization.
        self.synchronize(false)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>, BoxError> {
        Ok(Box::new(TkrzwReader { store: self, iter: None }))
    }

    fn len(&self) -> Result<u64, BoxError> {
        // SAFETY: a live handle.
        let count = unsafe { tkrzw_dbm_count(self.dbm) };
        u64::try_from(count).map_err(|_| failure("counting"))
    }

    fn iterate(&self) -> Result<u64, BoxError> {
        let iter = Iter::new(self)?;
        let mut count = 0u64;
        // SAFETY: a live iterator of this handle.
        if !unsafe { tkrzw_dbm_iter_first(iter.0) } {
            return Err(failure("moving an iterator to the first record"));
        }
        while iter.visit(|_, _| count += 1) {
            // SAFETY: as above.
            unsafe { tkrzw_dbm_iter_next(iter.0) };
        }
        Ok(count)
    }

    fn compact(&mut self) -> Result<bool, BoxError> {
        // SAFETY: a live handle; empty parameters keep the tuning.
        if !unsafe { tkrzw_dbm_rebuild(self.dbm, c"".as_ptr()) } {
            return Err(failure("rebuilding"));
        }
        Ok(true)
    }

    fn close(self: Box<Self>) -> Result<(), BoxError> {
        let dbm = self.dbm;
        std::mem::forget(self);
        // SAFETY: the handle is live, and forgotten above, so `Drop` does
        // not close it again.
        if unsafe { tkrzw_dbm_close(dbm) } {
            Ok(())
        } else {
            Err(failure("closing"))
        }
    }
}

impl Drop for Tkrzw {
    fn drop(&mut self) {
        // SAFETY: a live handle, closed once; `close` forgets the store.
        unsafe { tkrzw_dbm_close(self.dbm) };
    }
}

/// An iterator of one thread, freed when dropped.
struct Iter(*mut TkrzwIter);

impl Iter {
    fn new(store: &Tkrzw) -> Result<Iter, BoxError> {
        // SAFETY: a live handle; the iterator is freed before the store
        // closes (it borrows the store through its reader).
        let iter = unsafe { tkrzw_dbm_make_iterator(store.dbm) };
        if iter.is_null() {
            return Err(failure("making an iterator"));
        }
        Ok(Iter(iter))
    }

    /// Shows `f` the current record's key and value where the library
    /// holds them, without copies; false if there is none.
    fn visit<F: FnMut(&[u8], &[u8])>(&self, mut f: F) -> bool {
        extern "C" fn show<G: FnMut(&[u8], &[u8])>(
            arg: *mut c_void,
            key: *const c_char,
            key_size: i32,
            value: *const c_char,
            value_size: i32,
            _new_size: *mut i32,
        ) -> *const c_char {
            if !value.is_null() && key_size >= 0 && value_size >= 0 {
                // SAFETY: `arg` is the `G` passed by `visit` below, alive
                // for the call; the library hands a key and a value of the
                // sizes given, valid during the callback.
                unsafe {
                    let f = &mut *arg.cast::<G>();
                    f(
                        std::slice::from_raw_parts(key.cast(), key_size as usize),
                        std::slice::from_raw_parts(value.cast(), value_size as usize),
                    );
                }
            }
            // SAFETY: a static of the library, set at its load.
            unsafe { TKRZW_REC_PROC_NOOP }
        }
        // SAFETY: a live iterator; `f` outlives the call, which runs the
        // callback at most once, on this thread.
        unsafe { tkrzw_dbm_iter_process(self.0, show::<F>, (&mut f as *mut F).cast(), false) }
    }
}

impl Drop for Iter {
    fn drop(&mut self) {
        // SAFETY: made by `tkrzw_dbm_make_iterator`, freed once.
        unsafe { tkrzw_dbm_iter_free(self.0) };
    }
}

struct TkrzwReader<'a> {
    store: &'a Tkrzw,
    iter: Option<Iter>,
}

impl Reader for TkrzwReader<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>, BoxError> {
        let mut value_size = 0i32;
        // SAFETY: a live handle; the key outlives the call.
        let value =
            unsafe { tkrzw_dbm_get(self.store.dbm, key.as_ptr().cast(), size(key)?, &mut value_size) };
        if value.is_null() {
            // SAFETY: reads this thread's last status.
            if unsafe { tkrzw_get_last_status_code() } == NOT_FOUND_ERROR {
                return Ok(None);
            }
            return Err(failure("getting a record"));
        }
        // SAFETY: the library's copy of the value, allocated with malloc,
        // freed once here.
        unsafe { libc_free(value.cast()) };
        Ok(Some(value_size as usize))
    }

    fn range(&mut self, start: &[u8], count: usize) -> Result<Option<usize>, BoxError> {
        if !self.store.ordered {
            return Ok(None);
        }
        let iter = match &mut self.iter {
            Some(iter) => iter,
            empty => empty.insert(Iter::new(self.store)?),
        };
        // SAFETY: a live iterator; the key outlives the call.
        if !unsafe { tkrzw_dbm_iter_jump(iter.0, start.as_ptr().cast(), size(start)?) } {
            return Err(failure("jumping an iterator"));
        }
        let mut bytes = 0;
        for i in 0..count {
            // No step past the last record asked for.
            // SAFETY: a live iterator.
            if i > 0 && !unsafe { tkrzw_dbm_iter_next(iter.0) } {
                break;
            }
            if !iter.visit(|key, value| bytes += key.len() + value.len()) {
                break;
            }
        }
        Ok(Some(bytes))
    }
}

extern "C" {
    #[link_name = "free"]
    fn libc_free(ptr: *mut c_void);
}

//! LZ4's block format through liblz4, the reference C library (built from
//! its source in `csrc/` by build.rs, with 64 KiB hash tables and every
//! symbol prefixed, see `csrc/lz4_kuradb.c`), behind a safe API.
//!
//! Chosen over lz4_flex for speed on values of a few hundred bytes, where
//! the per-value set-up dominates: lz4_flex builds a fresh 16 KiB hash table
//! at every compression and hashes a preset dictionary anew each time,
//! while liblz4 keeps one state per thread, reset lazily between values, and
//! hashes a dictionary once ([`Lz4Dictionary`]), attaching it to that state
//! per value without a copy. liblz4's `LZ4_decompress_safe*` decoders check
//! every offset and length against their buffers: a damaged block is an
//! error, never a read or write out of bounds.
//!
//! Sizes are C `int`s: inputs over [`LZ4_MAX_INPUT`] are refused here (the
//! callers fall back to lz4_flex for them, see `dbm/hash/lz4.rs`).

use std::cell::RefCell;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// The largest input liblz4 compresses (its `LZ4_MAX_INPUT_SIZE`).
pub(crate) const LZ4_MAX_INPUT: usize = 0x7E00_0000;
/// liblz4's default speed/ratio trade-off, as `LZ4_compress_default`'s.
const ACCELERATION: c_int = 1;

/// liblz4's `LZ4_stream_t`, never looked into from Rust.
#[repr(C)]
struct LZ4StreamEncode {
    _opaque: [u8; 0],
}

// liblz4's functions under the names csrc/lz4_kuradb.c gives them; the
// signatures are those of its lz4.h.
extern "C" {
    fn kuradb_lz4_create_stream() -> *mut LZ4StreamEncode;
    fn kuradb_lz4_free_stream(stream: *mut LZ4StreamEncode);
    fn kuradb_lz4_reset_stream_fast(stream: *mut LZ4StreamEncode);
    fn kuradb_lz4_load_dict_slow(
        stream: *mut LZ4StreamEncode,
        dictionary: *const c_char,
        dict_size: c_int,
    ) -> c_int;
    fn kuradb_lz4_attach_dictionary(working: *mut LZ4StreamEncode, dictionary: *const LZ4StreamEncode);
    fn kuradb_lz4_compress_fast_continue(
        stream: *mut LZ4StreamEncode,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        acceleration: c_int,
    ) -> c_int;
    fn kuradb_lz4_compress_fast_ext_state_fast_reset(
        state: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        acceleration: c_int,
    ) -> c_int;
    fn kuradb_lz4_decompress_safe_using_dict(
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        dict_start: *const c_char,
        dict_size: c_int,
    ) -> c_int;
    #[cfg(test)]
    fn kuradb_lz4_sizeof_state() -> c_int;
}

/// An `LZ4_stream_t`, liblz4's compression state (mostly its hash table, of
/// 64 KiB as build.rs builds liblz4), owned: freed on drop.
struct Stream(NonNull<LZ4StreamEncode>);

impl Stream {
    #[expect(unsafe_code, reason = "allocates liblz4's compression state")]
    fn new() -> Stream {
        // SAFETY: kuradb_lz4_create_stream (LZ4_createStream) takes nothing and answers a newly
        // allocated, initialized state, or null when malloc fails.
        let ptr = unsafe { kuradb_lz4_create_stream() };
        Stream(NonNull::new(ptr).expect("liblz4 could not allocate its compression state"))
    }
}

impl Drop for Stream {
    #[expect(unsafe_code, reason = "frees liblz4's compression state")]
    fn drop(&mut self) {
        // SAFETY: the pointer came from kuradb_lz4_create_stream and is freed once,
        // here; nothing refers to it afterwards (a working stream attached
        // to a dictionary's is re-attached before every use, see `compress`,
        // and a dictionary outlives every compression that borrows it).
        unsafe { kuradb_lz4_free_stream(self.0.as_ptr()) };
    }
}

thread_local! {
    /// The state every compression on this thread works in, reset (lazily:
    /// its table is cleared only when its offsets run out) before each.
    static WORKING: RefCell<Stream> = RefCell::new(Stream::new());
    /// The dictionary last decoded with on this thread, by id, and a buffer
    /// holding its content, behind which values are decoded.
    static DECODING: RefCell<(u64, Vec<u8>)> = const { RefCell::new((0, Vec::new())) };
}

/// Numbers dictionaries, so that a thread's decoding buffer knows whether
/// it holds the one asked for (an address could be reused by a later one).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// A thread's decoding buffer keeps at most this much room past the
/// dictionary once a large value has gone through it.
const KEPT_ROOM: usize = 1 << 20;

/// A preset dictionary, hashed once into a state of its own that each
/// compression with it attaches to the thread's working state.
pub(crate) struct Lz4Dictionary {
    stream: Stream,
    /// The content liblz4 uses (the last 64 KiB at most), which the state
    /// points into: never changed, and boxed, so it does not move with the
    /// struct.
    content: Box<[u8]>,
    id: u64,
}

// SAFETY: after `new`, the dictionary's state and bytes are only read:
// LZ4_attach_dictionary takes the state as const, compressions read it and
// the bytes through the working state, and decompressions read the bytes;
// so sharing one between threads is sharing immutable memory.
#[expect(unsafe_code, reason = "the dictionary's state is read-only after it is loaded")]
unsafe impl Send for Lz4Dictionary {}
// SAFETY: as for Send: nothing writes a dictionary after `new`.
#[expect(unsafe_code, reason = "the dictionary's state is read-only after it is loaded")]
unsafe impl Sync for Lz4Dictionary {}

impl Lz4Dictionary {
    /// Hashes `bytes` (of which liblz4 uses the last 64 KiB, lz4's window).
    #[expect(unsafe_code, reason = "loads the dictionary into liblz4's state")]
    pub(crate) fn new(bytes: &[u8]) -> Lz4Dictionary {
        let stream = Stream::new();
        let content: Box<[u8]> = bytes[bytes.len().saturating_sub(64 << 10)..].into();
        // SAFETY: the state is valid (made above) and ours alone; `content`
        // is a live slice of at most 64 KiB (fits a c_int), which the state
        // then points into: it lives as long as the
        // state (same struct) and are never written or moved (a Box's heap
        // block stays put when the struct moves). The slow load indexes
        // every position of the dictionary, not every third: done once, it
        // finds more matches for every value after.
        unsafe {
            kuradb_lz4_load_dict_slow(stream.0.as_ptr(), content.as_ptr().cast(), content.len() as c_int)
        };
        Lz4Dictionary { stream, content, id: NEXT_ID.fetch_add(1, Ordering::Relaxed) }
    }
}

/// Compresses `src` into `dst` as one lz4 block, with `dict` as its preset
/// dictionary if given; answers the size, or `None` if the block does not
/// fit `dst` or `src` is over [`LZ4_MAX_INPUT`].
#[expect(unsafe_code, reason = "calls liblz4's compressor")]
pub(crate) fn compress(src: &[u8], dst: &mut [u8], dict: Option<&Lz4Dictionary>) -> Option<usize> {
    if src.len() > LZ4_MAX_INPUT {
        return None;
    }
    let (src_size, capacity) = (src.len() as c_int, dst.len().min(c_int::MAX as usize) as c_int);
    let (src, dst) = (src.as_ptr().cast::<c_char>(), dst.as_mut_ptr().cast::<c_char>());
    let n = WORKING.with_borrow_mut(|working| {
        let state = working.0.as_ptr();
        match dict {
            // SAFETY: `state` is this thread's working state, borrowed
            // mutably; src and dst are live slices of src_size and at least
            // capacity bytes (both fit a c_int, checked above), which do not
            // overlap (one is shared, one exclusive). The call resets the
            // state itself (dropping any dictionary attached before), and
            // writes at most capacity bytes.
            None => unsafe {
                kuradb_lz4_compress_fast_ext_state_fast_reset(
                    state.cast(),
                    src,
                    dst,
                    src_size,
                    capacity,
                    ACCELERATION,
                )
            },
            // SAFETY: as above for the state and the slices. The reset
            // drops what the state held of earlier values; the dictionary's
            // state was loaded by `Lz4Dictionary::new` and it and its bytes
            // are borrowed for this whole call, and liblz4 detaches it at
            // the end of the compression, so the working state keeps no
            // pointer into it that a later call would follow without
            // resetting first.
            Some(d) => unsafe {
                kuradb_lz4_reset_stream_fast(state);
                kuradb_lz4_attach_dictionary(state, d.stream.0.as_ptr());
                kuradb_lz4_compress_fast_continue(state, src, dst, src_size, capacity, ACCELERATION)
            },
        }
    });
    (n > 0).then_some(n as usize)
}

/// Decompresses the lz4 block `src`, which decodes to `size` bytes, with
/// `dict` as its preset dictionary if given; answers the bytes, or, for a
/// block that is malformed or decodes to more than `size` bytes, the byte of
/// `src` at which decoding stopped. A block decoding to fewer bytes may
/// answer them: the caller compares.
///
/// With a dictionary, the block is decoded right behind its content, in a
/// buffer per thread that keeps the content between values, so that
/// liblz4 takes it as the prefix of its output: its faster path, which
/// tells no match into the dictionary from one into the output (copying
/// the value out costs less than the other path's test per match).
pub(crate) fn decompress(src: &[u8], size: usize, dict: Option<&Lz4Dictionary>) -> Result<Vec<u8>, usize> {
    if src.len() > c_int::MAX as usize || size > c_int::MAX as usize {
        return Err(0);
    }
    let Some(dict) = dict else {
        let mut out = Vec::new();
        decode_behind(&mut out, src, size)?;
        return Ok(out);
    };
    DECODING.with_borrow_mut(|(id, buf)| {
        let prefix = dict.content.len();
        if *id != dict.id {
            buf.clear();
            buf.extend_from_slice(&dict.content);
            *id = dict.id;
        }
        let n = decode_behind(buf, src, size);
        let out = n.map(|_| buf[prefix..].to_vec());
        buf.truncate(prefix);
        if buf.capacity() > prefix + KEPT_ROOM {
            buf.shrink_to(prefix + KEPT_ROOM);
        }
        out
    })
}

/// Decodes the block `src`, of at most `size` bytes, at the end of `buf`,
/// whose bytes (the last 64 KiB of them) are its preset dictionary;
/// answers the size, or the byte of `src` at which decoding stopped.
#[expect(unsafe_code, reason = "calls liblz4's checked decoder into a vector's spare room")]
fn decode_behind(buf: &mut Vec<u8>, src: &[u8], size: usize) -> Result<usize, usize> {
    let prefix = buf.len().min(64 << 10);
    buf.reserve(size);
    let len = buf.len();
    let base = buf.as_mut_ptr();
    // SAFETY: buf has room for size bytes past its len (reserved above), so
    // dst = base + len is in bounds and liblz4 writes at most size bytes
    // (its capacity argument; size and src.len() fit a c_int, checked by
    // the caller) there, inside the spare room, whatever src holds; it reads
    // only inside src and the prefix, the last `prefix` initialized bytes
    // of buf, right before dst (its "safe" decoder bounds every read and
    // write). src is a live slice, which cannot overlap buf (borrowed
    // mutably). It answers the bytes written, or a negative number.
    let n = unsafe {
        kuradb_lz4_decompress_safe_using_dict(
            src.as_ptr().cast(),
            base.add(len).cast(),
            src.len() as c_int,
            size as c_int,
            base.add(len - prefix).cast_const().cast(),
            prefix as c_int,
        )
    };
    // liblz4 answers -(position + 1) for a block it stops in.
    let n = usize::try_from(n).map_err(|_| (-(n as i64) - 1) as usize)?;
    // SAFETY: liblz4 wrote the n bytes after len (n <= size, within the
    // capacity), so they are initialized.
    unsafe { buf.set_len(len + n) };
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// build.rs's table size reaches the library kuradb links: its state is
    /// the 64 KiB table (plus a little), not the default 16 KiB one, which
    /// a CFLAGS that lost to the library's default would give.
    #[test]
    #[expect(unsafe_code, reason = "asks liblz4 the size of its state")]
    fn the_state_has_the_tables_build_rs_asks_for() {
        // SAFETY: LZ4_sizeofState takes nothing and reads nothing.
        let size = unsafe { kuradb_lz4_sizeof_state() } as usize;
        assert!((64 << 10..80 << 10).contains(&size), "liblz4's state is {size} bytes");
    }

    /// A block compressed here decodes here, with and without a dictionary,
    /// and a dictionary's matches make the block smaller.
    #[test]
    fn blocks_round_trip_with_and_without_a_dictionary() {
        let content = b"{\"sku\":\"SKU-000000\",\"price\":0,\"status\":\"shipped\"}";
        let dict = Lz4Dictionary::new(content);
        let value = b"{\"sku\":\"SKU-000123\",\"price\":4500,\"status\":\"shipped\"}";
        let mut out = vec![0u8; 128];
        let plain = compress(value, &mut out, None).unwrap();
        assert_eq!(decompress(&out[..plain], value.len(), None).unwrap(), value);
        let with = compress(value, &mut out, Some(&dict)).unwrap();
        assert!(with < plain, "{with} bytes with the dictionary, {plain} without");
        assert_eq!(decompress(&out[..with], value.len(), Some(&dict)).unwrap(), value);
        assert!(
            decompress(&out[..with], value.len(), None).is_err(),
            "its matches point into the dictionary"
        );
    }

    /// Values of two dictionaries read in turn on one thread each decode
    /// with their own (the thread's decoding buffer holds one at a time).
    #[test]
    fn dictionaries_taken_in_turn_each_decode_their_values() {
        let a = Lz4Dictionary::new(b"{\"sku\":\"SKU-000000\",\"price\":0,\"status\":\"shipped\"}");
        let b = Lz4Dictionary::new(b"{\"user\":\"user00000\",\"city\":\"osaka\",\"note\":\"ok\"}");
        let (va, vb) = (
            &b"{\"sku\":\"SKU-000777\",\"price\":12,\"status\":\"shipped\"}"[..],
            &b"{\"user\":\"user04711\",\"city\":\"osaka\",\"note\":\"ok\"}"[..],
        );
        let (mut ba, mut bb) = (vec![0u8; 128], vec![0u8; 128]);
        let na = compress(va, &mut ba, Some(&a)).unwrap();
        let nb = compress(vb, &mut bb, Some(&b)).unwrap();
        for _ in 0..3 {
            assert_eq!(decompress(&ba[..na], va.len(), Some(&a)).unwrap(), va);
            assert_eq!(decompress(&bb[..nb], vb.len(), Some(&b)).unwrap(), vb);
        }
        assert_ne!(
            decompress(&ba[..na], va.len(), Some(&b)).ok().as_deref(),
            Some(va),
            "b's content is not a's"
        );
    }

    /// A block that does not fit the output is refused, not cut.
    #[test]
    fn a_block_too_large_for_its_output_is_refused() {
        let value = [7u8; 1000];
        let mut out = vec![0u8; 64];
        let n = compress(&value, &mut out, None).unwrap();
        assert!(compress(&value, &mut out[..n - 1], None).is_none());
        assert!(decompress(&out[..n], 999, None).is_err());
    }
}

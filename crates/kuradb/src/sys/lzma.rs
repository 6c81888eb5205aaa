//! Raw LZMA2 through liblzma, xz's library (built from its source by
//! `liblzma-sys` with its `static` feature: no system library is needed),
//! behind a safe API: the lzma mode's codec.
//!
//! A value is one raw LZMA2 stream: no .xz container around it (the
//! reference's 47-50 bytes of headers, index and footer a value), as the
//! record already says the value's size and its checksum covers the bytes.
//! Raw streams are also what takes a preset dictionary. The window (the
//! dictionary size) is not stored: both sides derive it from the value's
//! size and the preset dictionary's ([`window`]), which makes that function
//! part of the file format.
//!
//! Each thread keeps one encoder and one decoder and re-initializes them
//! per value, which reuses their memory (liblzma reallocates only when the
//! window changes); a state grown for a large window is freed after use.
//!
//! The reference's own lzma values (.xz streams, see `dbm/tkrzw/codec.rs`)
//! are read by [`decompress_container`], liblzma's automatic decoder, the
//! one the reference reads them with.

use std::cell::RefCell;

use liblzma_sys as ffi;

/// The preset level: 6, xz's default and the reference's, for the smallest
/// values: whoever picks lzma picks it for size, and the fast levels 0 to 3
/// wrote noticeably larger files (bench/results/2026-11-29-compression.md,
/// "lzma"). The level's own window is not used: see [`window`]. Not
/// part of the format: an LZMA2 stream carries what its decoder needs.
const PRESET: u32 = 6;
/// The smallest window liblzma takes.
const WINDOW_MIN: u32 = 4 << 10;
/// The largest window: level 6's.
const WINDOW_MAX: u32 = 8 << 20;
/// A thread's encoder or decoder whose window was over this is freed after
/// its value: a level-6 encoder holds about twelve times its window (at
/// 8 MiB: 64 MiB of match tree, 16 of hash table, 12.5 of buffer).
const KEPT_WINDOW: u32 = 64 << 10;

/// The window of a value of `len` bytes compressed after a preset
/// dictionary of `preset` bytes: the power of two that holds both, at least
/// 4 KiB and at most 8 MiB. A window is all the memory a stream can refer
/// back into, so one past the value and the dictionary would only cost the
/// encoder time and memory: liblzma sizes its match finder by it and clears
/// its hash table at every value (about 516 KiB for any window up to
/// 128 KiB, 16 MiB at the reference's fixed 8 MiB, which is much of why its
/// lzma sets are slow).
///
/// Part of the format: the decoder calls this with the record's size to
/// size its window. A decoder's window may be larger than the encoder's,
/// never smaller, so a change that answers less for some (len, preset)
/// would make the files written before unreadable.
pub(crate) fn window(len: usize, preset: usize) -> u32 {
    let need = len.saturating_add(preset).min(WINDOW_MAX as usize) as u32;
    need.next_power_of_two().clamp(WINDOW_MIN, WINDOW_MAX)
}

/// An `lzma_stream`, owned: its coder's memory is freed on drop.
struct Stream {
    raw: Box<ffi::lzma_stream>,
    /// The window the coder was last set up for (0: none yet).
    window: u32,
}

impl Stream {
    #[expect(unsafe_code, reason = "makes liblzma's LZMA_STREAM_INIT, an all-zero struct")]
    fn new() -> Stream {
        // SAFETY: LZMA_STREAM_INIT is the struct with every field zero (null
        // pointers, zero counts, the reserved enums' zero value); a zeroed
        // lzma_stream is the documented way to start one.
        let raw = Box::new(unsafe { std::mem::zeroed::<ffi::lzma_stream>() });
        Stream { raw, window: 0 }
    }

    /// Frees the coder's memory (the stream can be set up again after).
    #[expect(unsafe_code, reason = "frees liblzma's coder")]
    fn end(&mut self) {
        // SAFETY: the stream was zeroed at creation and only ever set up by
        // lzma_raw_encoder/decoder; lzma_end frees what they allocated (or
        // nothing) and leaves the stream reusable.
        unsafe { ffi::lzma_end(&mut *self.raw) };
        self.window = 0;
    }

    /// Runs the coder over what it can of `src` into `dst`, finishing;
    /// answers (bytes read, bytes written, liblzma's code).
    #[expect(unsafe_code, reason = "runs liblzma's coder over two slices")]
    fn step(&mut self, src: &[u8], dst: &mut [u8]) -> (usize, usize, ffi::lzma_ret) {
        let s = &mut *self.raw;
        s.next_in = src.as_ptr();
        s.avail_in = src.len();
        s.next_out = dst.as_mut_ptr();
        s.avail_out = dst.len();
        // SAFETY: the stream's coder was set up (every caller does it
        // first); next_in/avail_in describe a live slice it only reads, and
        // next_out/avail_out a live, exclusive one it writes at most
        // avail_out bytes of. Both pointers are cleared before the slices'
        // borrows end, so the stream keeps none.
        let ret = unsafe { ffi::lzma_code(s, ffi::LZMA_FINISH) };
        let done = (src.len() - s.avail_in, dst.len() - s.avail_out);
        s.next_in = std::ptr::null();
        s.avail_in = 0;
        s.next_out = std::ptr::null_mut();
        s.avail_out = 0;
        (done.0, done.1, ret)
    }

    /// Runs the coder set up last over all of `src` into `dst`, to the
    /// stream's end; answers (bytes read, bytes written), or liblzma's code
    /// if the end was not reached (output full, or input damaged or cut).
    fn finish(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(usize, usize), ffi::lzma_ret> {
        match self.step(src, dst) {
            (read, written, ffi::LZMA_STREAM_END) => Ok((read, written)),
            (_, _, ret) => Err(ret),
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.end();
    }
}

thread_local! {
    static ENCODER: RefCell<Stream> = RefCell::new(Stream::new());
    static DECODER: RefCell<Stream> = RefCell::new(Stream::new());
}

/// The LZMA2 options of a value of `len` bytes after `preset`: level 6's,
/// with [`window`]'s window and the preset dictionary.
#[expect(unsafe_code, reason = "fills liblzma's options struct")]
fn options(len: usize, preset: &[u8]) -> ffi::lzma_options_lzma {
    // SAFETY: an all-zero lzma_options_lzma is a valid value of its plain
    // integer and pointer fields, and lzma_lzma_preset fills every field it
    // reads from a valid level (6 is one: it answers false for success).
    let mut opts = unsafe { std::mem::zeroed::<ffi::lzma_options_lzma>() };
    // SAFETY: `opts` is a live, exclusive struct of the type the call fills.
    let failed = unsafe { ffi::lzma_lzma_preset(&mut opts, PRESET) };
    debug_assert_eq!(failed, 0, "level {PRESET} is one of liblzma's presets");
    opts.dict_size = window(len, preset.len());
    if !preset.is_empty() {
        opts.preset_dict = preset.as_ptr();
        opts.preset_dict_size = preset.len().min(u32::MAX as usize) as u32;
    }
    opts
}

/// Sets `stream` up as an encoder (`encode`) or decoder of a value of `len`
/// bytes after `preset`; false if liblzma refuses (out of memory).
#[expect(unsafe_code, reason = "sets liblzma's raw coder up")]
fn set_up(stream: &mut Stream, encode: bool, len: usize, preset: &[u8]) -> bool {
    let mut opts = options(len, preset);
    let filters = [
        ffi::lzma_filter { id: ffi::LZMA_FILTER_LZMA2, options: (&raw mut opts).cast() },
        ffi::lzma_filter { id: ffi::LZMA_VLI_UNKNOWN, options: std::ptr::null_mut() },
    ];
    // SAFETY: the stream is zeroed or was set up before (re-initializing
    // reuses its memory); the filter chain ends with LZMA_VLI_UNKNOWN, as
    // liblzma requires, and its options outlive the call. liblzma copies the
    // preset dictionary into the coder's own window during set-up. The LZMA2
    // encoder keeps a copy of the options struct, `preset_dict` pointer
    // included, but reads only its lc, lp and pb after set-up (the pointer
    // would be read again only by `lzma_filters_update`, never called
    // here), so the pointer going stale when `preset` is dropped is harmless.
    let ret = unsafe {
        if encode {
            ffi::lzma_raw_encoder(&mut *stream.raw, filters.as_ptr())
        } else {
            ffi::lzma_raw_decoder(&mut *stream.raw, filters.as_ptr())
        }
    };
    stream.window = opts.dict_size;
    ret == ffi::LZMA_OK
}

/// Frees a thread's coder that grew past [`KEPT_WINDOW`].
fn trim(stream: &mut Stream) {
    if stream.window > KEPT_WINDOW {
        stream.end();
    }
}

/// Compresses `src` into `dst` as one raw LZMA2 stream, after `preset` (may
/// be empty); answers the size, or `None` if it does not fit `dst`.
pub(crate) fn compress(src: &[u8], dst: &mut [u8], preset: &[u8]) -> Option<usize> {
    ENCODER.with_borrow_mut(|stream| {
        let n = if set_up(stream, true, src.len(), preset) {
            stream.finish(src, dst).ok().map(|(_, written)| written)
        } else {
            stream.end();
            None
        };
        trim(stream);
        n
    })
}

/// Decompresses the raw LZMA2 stream `src`, compressed after `preset`,
/// which decodes to `size` bytes; answers them, or why it does not decode.
/// A stream that decodes to fewer bytes may answer them: the caller compares.
pub(crate) fn decompress(src: &[u8], size: usize, preset: &[u8]) -> Result<Vec<u8>, String> {
    DECODER.with_borrow_mut(|stream| {
        if !set_up(stream, false, size, preset) {
            stream.end();
            return Err(format!("liblzma could not set a decoder up for {size} bytes"));
        }
        let mut out = vec![0u8; size];
        let outcome = match stream.finish(src, &mut out) {
            Ok((read, written)) if read == src.len() => {
                out.truncate(written);
                Ok(out)
            }
            Ok((read, _)) => {
                Err(format!("the lzma stream ({} bytes) ends at its byte {read}, before its last", src.len()))
            }
            Err(ret) => Err(format!(
                "the lzma stream ({} bytes) is malformed, cut short, or decodes to more than {size} bytes \
                 (liblzma's code {ret})",
                src.len()
            )),
        };
        trim(stream);
        outcome
    })
}

/// The most memory the decoder of a reference's value may take: level 9's
/// 64 MiB window with room to spare (the reference's level 6 takes 8 MiB).
/// A damaged header asking for more is an error, not an allocation.
#[cfg(feature = "tkrzw")]
const CONTAINER_MEMLIMIT: u64 = 128 << 20;

/// Decompresses `src`, one .xz stream or one legacy .lzma stream (the
/// reference writes the former; its decoder takes both), to at most `max`
/// bytes; answers them, or why the stream does not decode.
#[cfg(feature = "tkrzw")]
#[expect(unsafe_code, reason = "sets liblzma's automatic decoder up")]
pub(crate) fn decompress_container(src: &[u8], max: usize) -> Result<Vec<u8>, String> {
    let mut stream = Stream::new();
    // SAFETY: the stream is freshly zeroed (LZMA_STREAM_INIT); flags 0 asks
    // for nothing beyond decoding.
    let ret = unsafe { ffi::lzma_auto_decoder(&mut *stream.raw, CONTAINER_MEMLIMIT, 0) };
    if ret != ffi::LZMA_OK {
        return Err(format!("liblzma could not set its decoder up (code {ret})"));
    }
    // One byte past `max`, so that a value of exactly `max` bytes ends with
    // room to spare and one longer is told by its writing that byte.
    let cap = max.saturating_add(1);
    let mut out = vec![0u8; (src.len().saturating_mul(4) + 64).min(cap)];
    let mut written = 0;
    let mut read = 0;
    loop {
        let (r, w, ret) = stream.step(&src[read..], &mut out[written..]);
        read += r;
        written += w;
        match ret {
            _ if written > max => return Err(format!("it expands past {max} bytes")),
            ffi::LZMA_STREAM_END if read == src.len() => {
                out.truncate(written);
                return Ok(out);
            }
            ffi::LZMA_STREAM_END => return Err(format!("it ends at its byte {read}, before its last")),
            ffi::LZMA_OK if written == out.len() => {
                let grown = out.len().saturating_mul(2).min(cap);
                out.resize(grown, 0);
            }
            ffi::LZMA_OK if w > 0 || r > 0 => {}
            ffi::LZMA_MEMLIMIT_ERROR => {
                return Err(format!("its decoder would need more than {CONTAINER_MEMLIMIT} bytes"))
            }
            ffi::LZMA_MEM_ERROR => return Err("liblzma ran out of memory decoding it".into()),
            ffi::LZMA_OK | ffi::LZMA_BUF_ERROR => return Err("it is cut short".into()),
            code => return Err(format!("it is malformed (liblzma's code {code})")),
        }
    }
}

/// `src` as one .xz stream without an integrity check, as the reference
/// writes its lzma values: for tests of the reader.
#[cfg(test)]
pub(crate) fn xz_for_tests(src: &[u8]) -> Vec<u8> {
    xz_with_check(src, ffi::LZMA_CHECK_NONE)
}

/// `src` as one .xz stream with the integrity check `check`.
#[cfg(test)]
#[expect(unsafe_code, reason = "calls liblzma's one-shot .xz encoder")]
fn xz_with_check(src: &[u8], check: ffi::lzma_check) -> Vec<u8> {
    let mut out = vec![0u8; src.len() + 1024];
    let mut pos = 0usize;
    // SAFETY: src and out are live slices, out of out.len() bytes, of which
    // the call writes at most that many, answering the count in pos.
    let ret = unsafe {
        ffi::lzma_easy_buffer_encode(
            PRESET,
            check,
            std::ptr::null(),
            src.as_ptr(),
            src.len(),
            out.as_mut_ptr(),
            &mut pos,
            out.len(),
        )
    };
    assert_eq!(ret, ffi::LZMA_OK);
    out.truncate(pos);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| {
                format!(
                    "{{\"sku\":\"SKU-{:06}\",\"price\":{},\"status\":\"shipped\"}},",
                    i * 7919 % 1_000_000,
                    i % 97
                )
            })
            .collect::<String>()
            .into_bytes()
    }

    /// Values round-trip with and without a preset dictionary, at every
    /// window size, and the dictionary's matches make small values smaller.
    #[test]
    fn streams_round_trip_and_a_preset_shrinks_small_values() {
        let preset = json(40);
        for n in [0usize, 1, 2, 10, 100, 3000, 40_000] {
            let value = json(n);
            for dict in [&[][..], &preset[..]] {
                let mut out = vec![0u8; value.len() + 64];
                let size = compress(&value, &mut out, dict).unwrap();
                assert_eq!(decompress(&out[..size], value.len(), dict).unwrap(), value, "{n} items");
            }
        }
        let value = json(3);
        let mut out = vec![0u8; 512];
        let plain = compress(&value, &mut out, &[]).unwrap();
        let with = compress(&value, &mut out, &preset).unwrap();
        assert!(with * 2 < plain, "{with} bytes with the dictionary, {plain} without");
        assert!(decompress(&out[..with], value.len(), &[]).map_or(true, |v| v != value));
    }

    /// A stream that does not fit its output is refused, and damaged or cut
    /// streams are errors (or decode to other bytes), never a panic.
    #[test]
    fn full_outputs_and_damaged_streams_are_refused() {
        let value = json(50);
        let mut out = vec![0u8; value.len()];
        let n = compress(&value, &mut out, &[]).unwrap();
        assert!(compress(&value, &mut out[..n - 1], &[]).is_none());
        let stored = out[..n].to_vec();
        assert!(decompress(&stored[..n / 2], value.len(), &[]).is_err());
        assert!(decompress(&stored, value.len() - 1, &[]).is_err());
        let mut longer = stored.clone();
        longer.push(0);
        assert!(decompress(&longer, value.len(), &[]).unwrap_err().contains("before its last"));
        let preset = json(30);
        for dict in [&[][..], &preset[..]] {
            let n = compress(&value, &mut out, dict).unwrap();
            let stored = out[..n].to_vec();
            for at in 0..n {
                let mut bad = stored.clone();
                bad[at] ^= 0x55;
                let _ = decompress(&bad, value.len(), dict);
            }
            // The thread's coders work as before after every failure.
            assert_eq!(decompress(&stored, value.len(), dict).unwrap(), value);
        }
        assert!(compress(&value, &mut out[..10], &[]).is_none());
        let n = compress(&value, &mut out, &[]).unwrap();
        assert_eq!(decompress(&out[..n], value.len(), &[]).unwrap(), value);
    }

    /// Values at the window's edges (the value and the dictionary filling a
    /// power of two, or one byte past it) and past the largest window, whose
    /// matches then reach back only 8 MiB, round-trip with and without a
    /// preset dictionary; the thread's coders, freed after a large window,
    /// serve small values after.
    #[test]
    fn values_at_the_window_edges_and_past_the_largest_round_trip() {
        let preset = json(40);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut text = json(40);
        while text.len() < (8 << 20) + 300_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Long repeats far apart, and noise, so matches span the window.
            if x.is_multiple_of(3) {
                let at = (x >> 8) as usize % text.len();
                let piece = text[at..(at + 4000).min(text.len())].to_vec();
                text.extend_from_slice(&piece);
            } else {
                text.extend((0..64).map(|i| (x >> (i % 56)) as u8));
            }
        }
        for dict in [&[][..], &preset[..]] {
            let mut lengths = vec![(8 << 20) + 300_000];
            for edge in [4096usize, 8192, 1 << 20, 8 << 20] {
                let at = edge.saturating_sub(dict.len());
                lengths.extend([at.saturating_sub(1), at, at + 1]);
            }
            for len in lengths {
                let value = &text[..len];
                let mut out = vec![0u8; len + len / 2 + 1024];
                let n = compress(value, &mut out, dict).unwrap();
                assert_eq!(
                    decompress(&out[..n], len, dict).unwrap(),
                    value,
                    "{len} bytes, preset {}",
                    dict.len()
                );
            }
            let small = json(5);
            let mut out = vec![0u8; 1024];
            let n = compress(&small, &mut out, dict).unwrap();
            assert_eq!(decompress(&out[..n], small.len(), dict).unwrap(), small);
        }
    }

    /// The reference's framings, .xz and the legacy .lzma, decode; cut,
    /// damaged or overlong ones are errors.
    #[test]
    fn containers_decode_and_damage_is_an_error() {
        let value: Vec<u8> = b"red apple, green apple, ".iter().copied().cycle().take(5000).collect();
        let xz = xz_for_tests(&value);
        assert_eq!(decompress_container(&xz, 1 << 20).unwrap(), value);
        // Python's `lzma.compress(b"red apple, green apple, " * 20, format=lzma.FORMAT_ALONE)`.
        let alone = [
            93u8, 0, 0, 128, 0, 255, 255, 255, 255, 255, 255, 255, 255, 0, 57, 25, 72, 175, 254, 104, 88, 51,
            236, 38, 6, 115, 81, 28, 111, 117, 142, 234, 190, 96, 163, 123, 31, 151, 116, 137, 63, 255, 31,
            110, 0, 0,
        ];
        assert_eq!(decompress_container(&alone, 1 << 20).unwrap(), &value[..480]);
        // The reference's METADATA modes add a CRC-32, CRC-64 or SHA-256.
        for check in [ffi::LZMA_CHECK_CRC32, ffi::LZMA_CHECK_CRC64, ffi::LZMA_CHECK_SHA256] {
            assert_eq!(decompress_container(&xz_with_check(&value, check), 1 << 20).unwrap(), value);
        }
        // Exactly the most it may expand to, and one byte more.
        assert_eq!(decompress_container(&xz, value.len()).unwrap(), value);
        let e = decompress_container(&xz, value.len() - 1).unwrap_err();
        assert!(e.contains(&format!("expands past {}", value.len() - 1)), "{e}");
        // A .lzma header asking for a 1 GiB window is refused, not allocated.
        let mut huge = alone;
        huge[1..5].copy_from_slice(&(1u32 << 30).to_le_bytes());
        let e = decompress_container(&huge, 1 << 20).unwrap_err();
        assert!(e.contains("would need more than"), "{e}");
        assert!(decompress_container(&xz[..xz.len() / 2], 1 << 20).unwrap_err().contains("cut short"));
        let mut longer = xz.clone();
        longer.push(7);
        assert!(decompress_container(&longer, 1 << 20).is_err());
        assert!(decompress_container(b"not lzma at all", 1 << 20).is_err());
        for at in 0..xz.len() {
            let mut bad = xz.clone();
            bad[at] ^= 0x20;
            let _ = decompress_container(&bad, 1 << 20);
        }
    }

    /// The window holds the value and the dictionary, within liblzma's bounds.
    #[test]
    fn the_window_is_a_power_of_two_that_holds_both() {
        assert_eq!(window(0, 0), 4096);
        assert_eq!(window(1000, 4096), 8192);
        assert_eq!(window(4096, 0), 4096);
        assert_eq!(window(100 << 20, 4096), 8 << 20);
        assert_eq!(window(usize::MAX, usize::MAX), 8 << 20);
    }
}

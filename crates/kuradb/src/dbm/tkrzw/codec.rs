//! The value compression of the reference's hash files (its
//! `record_comp_mode`), decoded: each stored value is one whole output of
//! the codec the header's static flags name, with nothing of the reference's
//! own around it (no flag, no size):
//!
//! | static flags & 0x70 | mode | a value is |
//! | --- | --- | --- |
//! | 0x10 | zlib | a raw DEFLATE stream (no zlib or gzip wrapper) |
//! | 0x20 | zstd | one zstd frame, with its magic and content size |
//! | 0x30 | lz4 | one lz4 block, with no size before it |
//! | 0x40 | lzma | an xz stream (usually without an integrity check) |
//!
//! Every value is compressed, even an empty or incompressible one. An lz4
//! block does not say how large its output is: it is decoded into room
//! doubled until it fits, up to what lz4 can expand to. Every output is
//! bounded by [`MAX_VALUE`], so that a damaged value cannot make the reader
//! allocate without end.

#[cfg(any(feature = "zstd", feature = "zlib"))]
use std::io::Read;

/// The largest value decoded: the reference's own decoders give up at 1 GiB.
#[cfg(any(feature = "zstd", feature = "zlib", feature = "lz4", feature = "lzma"))]
const MAX_VALUE: u64 = 1 << 30;
/// The most an lz4 block expands: each of its bytes stands for at most 255
/// of output (a run of a match length's extension bytes).
#[cfg(feature = "lz4")]
const LZ4_MAX_RATIO: usize = 255;

/// A compression mode of the reference's hash files that this reader decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RefCodec {
    Zlib,
    Zstd,
    Lz4,
    Lzma,
}

impl RefCodec {
    /// The codec the static flags of a hash file's header name: `Ok(None)`
    /// for none, `Err` with the name of one this reader lacks.
    pub fn of_flags(static_flags: u8) -> Result<Option<RefCodec>, &'static str> {
        match static_flags & 0x70 {
            0 => Ok(None),
            0x10 => Ok(Some(RefCodec::Zlib)),
            0x20 => Ok(Some(RefCodec::Zstd)),
            0x30 => Ok(Some(RefCodec::Lz4)),
            0x40 => Ok(Some(RefCodec::Lzma)),
            _ => Err("an extra codec (the reference's RC4 or AES cipher, or a custom one)"),
        }
    }

    /// The reference's name of the mode.
    pub fn name(self) -> &'static str {
        match self {
            RefCodec::Zlib => "zlib",
            RefCodec::Zstd => "zstd",
            RefCodec::Lz4 => "lz4",
            RefCodec::Lzma => "lzma",
        }
    }

    /// The value `stored` holds; the error says why it does not decode.
    pub fn decode(self, stored: &[u8]) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let done = match self {
            #[cfg(feature = "zlib")]
            RefCodec::Zlib => read_bounded(flate2::read::DeflateDecoder::new(stored), &mut out),
            #[cfg(feature = "zstd")]
            RefCodec::Zstd => zstd::stream::read::Decoder::with_buffer(stored)
                .map_err(|e| e.to_string())
                .and_then(|d| read_bounded(d, &mut out)),
            #[cfg(feature = "lz4")]
            RefCodec::Lz4 => return decode_lz4(stored),
            // liblzma's automatic decoder, as the reference's: it writes
            // .xz, and its decoder also takes the older .lzma format.
            #[cfg(feature = "lzma")]
            RefCodec::Lzma => crate::sys::lzma::decompress_container(stored, MAX_VALUE as usize)
                .map(|decoded| out = decoded),
            // The codec's feature is named as the mode.
            #[cfg(not(all(feature = "zstd", feature = "lz4", feature = "zlib", feature = "lzma")))]
            _ => {
                let what = format!("its value, compressed with {},", self.name());
                return Err(crate::error::Error::needs_feature(what, self.name()).to_string());
            }
        };
        done.map(|()| out).map_err(|e| format!("its {} value does not decompress: {e}", self.name()))
    }
}

/// Reads all of `reader` into `out`, refusing more than [`MAX_VALUE`] bytes.
#[cfg(any(feature = "zstd", feature = "zlib"))]
fn read_bounded(reader: impl Read, out: &mut Vec<u8>) -> Result<(), String> {
    reader.take(MAX_VALUE + 1).read_to_end(out).map_err(|e| e.to_string())?;
    if out.len() as u64 > MAX_VALUE {
        return Err(format!("it expands past {MAX_VALUE} bytes"));
    }
    Ok(())
}

/// Decodes an lz4 block of unknown output size: into room four times the
/// block's, doubled while the block does not fit.
#[cfg(feature = "lz4")]
fn decode_lz4(stored: &[u8]) -> Result<Vec<u8>, String> {
    let most = (stored.len().saturating_mul(LZ4_MAX_RATIO) + 64).min(MAX_VALUE as usize);
    let mut room = (stored.len().saturating_mul(4) + 32).min(most);
    loop {
        let mut out = vec![0u8; room];
        match lz4_flex::block::decompress_into(stored, &mut out) {
            Ok(n) => {
                out.truncate(n);
                return Ok(out);
            }
            Err(lz4_flex::block::DecompressError::OutputTooSmall { .. }) if room < most => {
                room = room.saturating_mul(2).min(most);
            }
            Err(e) => return Err(format!("its lz4 value does not decompress: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RefCodec;

    #[test]
    #[cfg(all(feature = "zstd", feature = "lz4", feature = "zlib", feature = "lzma"))]
    fn each_codec_reads_its_framing_and_refuses_damage() {
        let value: Vec<u8> = b"red apple, green apple, ".iter().copied().cycle().take(5000).collect();
        let mut zlib = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(6));
        std::io::Write::write_all(&mut zlib, &value).unwrap();
        let zlib = zlib.finish().unwrap();
        let zstd = zstd::bulk::compress(&value, 3).unwrap();
        // A bare lz4 block, as the reference writes it: no size before it;
        // this one expands over 100 times, past the first tries' room.
        let lz4 = lz4_flex::block::compress(&value);
        assert!(lz4.len() * 8 < value.len());
        let xz = crate::sys::lzma::xz_for_tests(&value);
        for (codec, stored) in
            [(RefCodec::Zlib, zlib), (RefCodec::Zstd, zstd), (RefCodec::Lz4, lz4), (RefCodec::Lzma, xz)]
        {
            assert_eq!(codec.decode(&stored).unwrap(), value, "{codec:?}");
            let cut = &stored[..stored.len() / 2];
            let e = codec.decode(cut).unwrap_err();
            assert!(e.contains(codec.name()) && e.contains("does not decompress"), "{codec:?}: {e}");
        }
    }

    #[test]
    fn the_static_flags_name_the_codec() {
        assert_eq!(RefCodec::of_flags(0x04 | 0x01), Ok(None));
        assert_eq!(RefCodec::of_flags(0x31), Ok(Some(RefCodec::Lz4)));
        assert!(RefCodec::of_flags(0x51).unwrap_err().contains("cipher"));
    }

    /// A build without a codec refuses the reference's values of it,
    /// naming the Cargo feature.
    #[test]
    fn a_codec_this_build_lacks_names_its_feature() {
        let built = [
            (RefCodec::Zlib, cfg!(feature = "zlib")),
            (RefCodec::Zstd, cfg!(feature = "zstd")),
            (RefCodec::Lz4, cfg!(feature = "lz4")),
            (RefCodec::Lzma, cfg!(feature = "lzma")),
        ];
        for (codec, _) in built.into_iter().filter(|&(_, built)| !built) {
            let e = codec.decode(b"anything").unwrap_err();
            assert!(e.contains(&format!("Cargo feature `{}`", codec.name())), "{e}");
        }
    }
}

//! The zstd mode: frames at level 3 with zstd's own dictionary, trimmed of
//! what the record already says (magicless, with neither content size,
//! dictionary id nor checksum).

use std::cell::RefCell;

use zstd::zstd_safe::{self, CCtx, CDict, CParameter, DCtx, DDict, DParameter, FrameFormat, ResetDirective};

use super::{decode_sized, Codec, Prepared};
use crate::dbm::hash::dictionary::{Dictionary, ZSTD_LEVEL};

/// The zstd codec, the row of mode zstd in `MODES`.
pub(crate) struct Zstd;

thread_local! {
    static ZSTD_C: RefCell<CCtx<'static>> = RefCell::new(CCtx::create());
    static ZSTD_D: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
}

/// zstd's digested forms of a dictionary, made once.
struct Digested(CDict<'static>, DDict<'static>);

fn digested(dict: Option<&Dictionary>) -> Option<&Digested> {
    dict.and_then(Dictionary::prepared::<Digested>)
}

impl Codec for Zstd {
    /// No more than the value less its stored form's head: zstd gives up
    /// as soon as the body would not be shorter than the value.
    fn room(&self, len: usize, at: usize) -> usize {
        len + 1 - at.min(len + 1)
    }

    fn compress_into(&self, value: &[u8], out: &mut [u8], dict: Option<&Dictionary>) -> Option<usize> {
        ZSTD_C.with_borrow_mut(|c| {
            let n = compress(c, value, out, digested(dict));
            // No reference to the dictionary stays behind in the context.
            let _ = c.reset(ResetDirective::SessionAndParameters);
            n
        })
    }

    fn decompress(&self, body: &[u8], size: usize, dict: Option<&Dictionary>) -> Result<Vec<u8>, String> {
        decode_sized(size, |out| {
            ZSTD_D.with_borrow_mut(|d| {
                let n = decompress(d, body, out, digested(dict));
                let _ = d.reset(ResetDirective::SessionAndParameters);
                n
            })
        })
    }

    fn prepare(&self, bytes: &[u8]) -> Option<Prepared> {
        Some(Box::new(Digested(CDict::create(bytes, ZSTD_LEVEL), DDict::create(bytes))))
    }

    fn check_dictionary(&self, bytes: &[u8]) -> Result<(), String> {
        match DCtx::create().load_dictionary(bytes) {
            Ok(_) => Ok(()),
            Err(_) => Err("zstd cannot load it".into()),
        }
    }
}

fn compress(c: &mut CCtx<'static>, value: &[u8], out: &mut [u8], dict: Option<&Digested>) -> Option<usize> {
    c.reset(ResetDirective::SessionAndParameters).ok()?;
    c.set_parameter(CParameter::CompressionLevel(ZSTD_LEVEL)).ok()?;
    c.set_parameter(CParameter::Format(FrameFormat::Magicless)).ok()?;
    c.set_parameter(CParameter::ContentSizeFlag(false)).ok()?;
    c.set_parameter(CParameter::ChecksumFlag(false)).ok()?;
    c.set_parameter(CParameter::DictIdFlag(false)).ok()?;
    if let Some(Digested(cdict, _)) = dict {
        c.ref_cdict(cdict).ok()?;
    }
    c.compress2(out, value).ok()
}

fn decompress(
    d: &mut DCtx<'static>,
    body: &[u8],
    out: &mut [u8],
    dict: Option<&Digested>,
) -> Result<usize, String> {
    let name = |code: usize| zstd_safe::get_error_name(code).to_string();
    d.reset(ResetDirective::SessionAndParameters).map_err(name)?;
    d.set_parameter(DParameter::Format(FrameFormat::Magicless)).map_err(name)?;
    if let Some(Digested(_, ddict)) = dict {
        d.ref_ddict(ddict).map_err(name)?;
    }
    d.decompress(out, body).map_err(name)
}

//! How `kura util` writes keys and values as text and reads them back.
//!
//! Three codecs, chosen by `--hex` and `--base64`, the same for what a
//! command reads (arguments, imported TSV) and what it writes (`get`, `list`,
//! exported TSV):
//!
//! - **text** (the default). Arguments are taken byte for byte. Where a record
//!   shares a line with others (`list`, TSV files) it is escaped in the text
//!   form of [`super::escape`], which reads back the reference's C escapes
//!   too.
//! - **hex**: two lowercase hex digits a byte (either case read).
//! - **base64**: the standard alphabet with padding.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use kuradb::{Error, ErrorKind, Result};

use super::escape::{escape, hex_digit, unescape, HEX};

/// How keys and values are written as text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// Raw bytes in arguments; escaped where records share lines.
    Text,
    /// Hexadecimal.
    Hex,
    /// Standard base64.
    Base64,
}

impl Codec {
    /// The bytes an argument stands for.
    pub fn decode_arg(self, arg: &std::ffi::OsStr, what: &str) -> Result<Vec<u8>> {
        match self {
            Codec::Text => Ok(os_bytes(arg)?),
            _ => {
                let text = arg.to_str().ok_or_else(|| {
                    Error::new(ErrorKind::InvalidArgument, format!("the {what} is not valid {}", self.name()))
                })?;
                self.decode_field(text.as_bytes(), what)
            }
        }
    }

    /// The bytes a field of a line stands for (escaped text, hex or base64).
    pub fn decode_field(self, field: &[u8], what: &str) -> Result<Vec<u8>> {
        let bad = |why: String| Error::new(ErrorKind::InvalidArgument, format!("the {what} {why}"));
        match self {
            Codec::Text => unescape(field).map_err(bad),
            Codec::Hex => decode_hex(field).map_err(bad),
            Codec::Base64 => STANDARD.decode(field).map_err(|e| bad(format!("is not valid base64 ({e})"))),
        }
    }

    /// `data` as one field of a line: escaped text, hex or base64.
    pub fn encode_field(self, data: &[u8], out: &mut Vec<u8>) {
        match self {
            Codec::Text => escape(data, out),
            Codec::Hex => {
                for b in data {
                    out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
                }
            }
            Codec::Base64 => out.extend_from_slice(STANDARD.encode(data).as_bytes()),
        }
    }

    /// `data` as a value printed on its own (`get`): raw bytes for text, else encoded.
    pub fn encode_alone(self, data: &[u8], out: &mut Vec<u8>) {
        match self {
            Codec::Text => out.extend_from_slice(data),
            _ => self.encode_field(data, out),
        }
    }

    /// The codec's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Text => "text",
            Codec::Hex => "hex",
            Codec::Base64 => "base64",
        }
    }
}

#[cfg(unix)]
fn os_bytes(arg: &std::ffi::OsStr) -> Result<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    Ok(arg.as_bytes().to_vec())
}

#[cfg(not(unix))]
fn os_bytes(arg: &std::ffi::OsStr) -> Result<Vec<u8>> {
    arg.to_str().map(|s| s.as_bytes().to_vec()).ok_or_else(|| {
        Error::new(ErrorKind::InvalidArgument, "an argument is not valid Unicode: give it with --hex")
    })
}

fn decode_hex(text: &[u8]) -> std::result::Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) {
        return Err("is not valid hex (an odd number of digits)".into());
    }
    text.chunks(2)
        .map(|p| Some(hex_digit(p[0])? << 4 | hex_digit(p[1])?))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| "is not valid hex".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_base64_round_trip() {
        let all: Vec<u8> = (0..=255).collect();
        for codec in [Codec::Hex, Codec::Base64, Codec::Text] {
            let mut out = Vec::new();
            codec.encode_field(&all, &mut out);
            assert_eq!(codec.decode_field(&out, "key").unwrap(), all, "{codec:?}");
        }
        assert!(Codec::Hex.decode_field(b"abc", "key").unwrap_err().message().contains("odd number"));
        assert!(Codec::Hex.decode_field(b"zz", "value").unwrap_err().message().contains("the value is"));
        assert!(Codec::Base64.decode_field(b"@@", "key").is_err());
    }
}

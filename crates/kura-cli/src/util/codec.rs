//! How `kura util` writes keys and values as text and reads them back.
//!
//! Three codecs, chosen by `--hex` and `--base64`, the same for what a
//! command reads (arguments, imported TSV) and what it writes (`get`, `list`,
//! exported TSV):
//!
//! - **text** (the default). Arguments are taken byte for byte. Where a record
//!   shares a line with others (`list`, TSV files) it is escaped: backslash is
//!   `\\`, tab `\t`, line feed `\n`, carriage return `\r`, every other byte
//!   below 0x20, 0x7f and every byte that is not part of valid UTF-8 `\xNN`
//!   (two lowercase hex digits). Valid UTF-8 text stays as it is. Unescaping
//!   is the exact inverse, and also reads the C escapes `\0 \a \b \v \f` and
//!   `\xNN` in either case, so the output of `tkrzw_dbm_util export --tsv
//!   --escape` imports unchanged. A backslash before anything else is an error.
//! - **hex**: two lowercase hex digits a byte (either case read).
//! - **base64**: the standard alphabet with padding.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use kuradb::{Error, ErrorKind, Result};

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

const HEX: &[u8; 16] = b"0123456789abcdef";

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

/// Appends `data` escaped (see the module's documentation) to `out`.
pub fn escape(data: &[u8], out: &mut Vec<u8>) {
    let mut rest = data;
    while !rest.is_empty() {
        // Valid UTF-8 runs are copied whole, minus the bytes that need escapes.
        let (valid, invalid) = match std::str::from_utf8(rest) {
            Ok(s) => (s.as_bytes(), &rest[rest.len()..]),
            Err(e) => rest.split_at(e.valid_up_to()),
        };
        for &b in valid {
            match b {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\t' => out.extend_from_slice(b"\\t"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                0..=0x1f | 0x7f => hex_escape(b, out),
                _ => out.push(b),
            }
        }
        if let Some((&b, after)) = invalid.split_first() {
            hex_escape(b, out);
            rest = after;
        } else {
            rest = invalid;
        }
    }
}

fn hex_escape(b: u8, out: &mut Vec<u8>) {
    out.extend_from_slice(&[b'\\', b'x', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
}

/// The bytes an escaped field stands for; the error says what is wrong.
pub fn unescape(field: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let b = field[i];
        i += 1;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let Some(&c) = field.get(i) else {
            return Err("ends with a lone backslash (write a backslash as \\\\)".into());
        };
        i += 1;
        out.push(match c {
            b'\\' => b'\\',
            b't' => b'\t',
            b'n' => b'\n',
            b'r' => b'\r',
            b'0' => 0,
            b'a' => 7,
            b'b' => 8,
            b'v' => 11,
            b'f' => 12,
            b'x' => {
                let pair = field.get(i..i + 2).and_then(|p| Some(hex_digit(p[0])? << 4 | hex_digit(p[1])?));
                i += 2;
                pair.ok_or("has \\x without two hex digits after it")?
            }
            other => {
                return Err(format!(
                    "has an unknown escape \\{} (write a backslash as \\\\)",
                    char::from(other).escape_default()
                ))
            }
        });
    }
    Ok(out)
}

fn hex_digit(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
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

    fn escaped(data: &[u8]) -> String {
        let mut out = Vec::new();
        escape(data, &mut out);
        String::from_utf8(out).expect("escaped text is UTF-8")
    }

    #[test]
    fn escaping_keeps_text_and_marks_the_rest() {
        assert_eq!(escaped(b"plain text"), "plain text");
        assert_eq!(escaped("東京\tA\\B\n\r".as_bytes()), "東京\\tA\\\\B\\n\\r");
        assert_eq!(escaped(b"\x00\x1f\x7f\xff\xe6\x9d"), "\\x00\\x1f\\x7f\\xff\\xe6\\x9d");
        assert_eq!(escaped(b""), "");
    }

    #[test]
    fn unescaping_is_the_exact_inverse() {
        let all: Vec<u8> = (0..=255).collect();
        let mut samples = vec![all.clone(), b"a\\x41".to_vec(), "東\u{7f}京".as_bytes().to_vec(), vec![]];
        samples.push(all.iter().rev().copied().chain("ü".bytes()).collect());
        for data in samples {
            assert_eq!(unescape(escaped(&data).as_bytes()).unwrap(), data);
        }
        assert_eq!(unescape(b"\\x4A\\0\\a").unwrap(), b"J\x00\x07");
        assert!(unescape(b"abc\\").unwrap_err().contains("lone backslash"));
        assert!(unescape(b"\\q").unwrap_err().contains("unknown escape \\q"));
        assert!(unescape(b"\\x4").unwrap_err().contains("two hex digits"));
    }

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

//! C-style escapes: bytes written as text in the two forms `kura` prints,
//! and the one reader of both. The named escapes are one table; a byte
//! without a name is `\xNN` (two lowercase hex digits).
//!
//! - [`escape`], the text codec of `kura util` (`list`, TSV files):
//!   backslash is `\\`, tab `\t`, line feed `\n`, carriage return `\r`,
//!   every other byte below 0x20, 0x7f and every byte that is not part of
//!   valid UTF-8 `\xNN`. Valid UTF-8 text stays as it is.
//! - [`escape_c`], the reference's C escapes (`kura ulog read --escape`,
//!   as `tkrzw_ulog_util` prints): `\0 \a \b \t \n \v \f \r \\` by name
//!   (`\x00` for a zero byte before an octal digit, which would read as
//!   part of it), other bytes below 0x20 and 0x7f `\xNN`, and every byte
//!   from 0x80 up as it is.
//! - [`unescape`], the exact inverse of both: it reads every named escape
//!   and `\xNN` in either case, so the output of `tkrzw_dbm_util export
//!   --tsv --escape` imports unchanged. A backslash before anything else is
//!   an error.

/// The named escapes: a byte and the letter after the backslash. The text
/// form names the first four only.
const NAMED: [(u8, u8); 9] = [
    (b'\\', b'\\'),
    (b'\t', b't'),
    (b'\n', b'n'),
    (b'\r', b'r'),
    (0, b'0'),
    (7, b'a'),
    (8, b'b'),
    (11, b'v'),
    (12, b'f'),
];
/// How many of [`NAMED`] the text form uses.
const TEXT_NAMED: usize = 4;

/// Lowercase hex digits.
pub const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `data` in the text form (see the module's documentation) to `out`.
pub fn escape(data: &[u8], out: &mut Vec<u8>) {
    let mut rest = data;
    while !rest.is_empty() {
        // Valid UTF-8 runs are copied whole, minus the bytes that need escapes.
        let (valid, invalid) = match std::str::from_utf8(rest) {
            Ok(s) => (s.as_bytes(), &rest[rest.len()..]),
            Err(e) => rest.split_at(e.valid_up_to()),
        };
        for &b in valid {
            match name_of(b, &NAMED[..TEXT_NAMED]) {
                Some(letter) => out.extend_from_slice(&[b'\\', letter]),
                None if b < 0x20 || b == 0x7f => hex_escape(b, out),
                None => out.push(b),
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

/// Appends `data` with the reference's C escapes (see the module's
/// documentation) to `out`.
pub fn escape_c(data: &[u8], out: &mut Vec<u8>) {
    for (i, &b) in data.iter().enumerate() {
        let octal_next = || data.get(i + 1).is_some_and(|n| (b'0'..=b'7').contains(n));
        match name_of(b, &NAMED) {
            Some(b'0') if octal_next() => hex_escape(b, out),
            Some(letter) => out.extend_from_slice(&[b'\\', letter]),
            None if b < 0x20 || b == 0x7f => hex_escape(b, out),
            None => out.push(b),
        }
    }
}

fn name_of(b: u8, table: &[(u8, u8)]) -> Option<u8> {
    table.iter().find(|&&(byte, _)| byte == b).map(|&(_, letter)| letter)
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
        if c == b'x' {
            let pair = field.get(i..i + 2).and_then(|p| Some(hex_digit(p[0])? << 4 | hex_digit(p[1])?));
            i += 2;
            out.push(pair.ok_or("has \\x without two hex digits after it")?);
            continue;
        }
        match NAMED.iter().find(|&&(_, letter)| letter == c) {
            Some(&(byte, _)) => out.push(byte),
            None => {
                return Err(format!(
                    "has an unknown escape \\{} (write a backslash as \\\\)",
                    char::from(c).escape_default()
                ))
            }
        }
    }
    Ok(out)
}

/// The value of a hex digit of either case.
pub fn hex_digit(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(data: &[u8]) -> String {
        let mut out = Vec::new();
        escape(data, &mut out);
        String::from_utf8(out).expect("escaped text is UTF-8")
    }

    fn escaped_c(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        escape_c(data, &mut out);
        out
    }

    #[test]
    fn escaping_keeps_text_and_marks_the_rest() {
        assert_eq!(escaped(b"plain text"), "plain text");
        assert_eq!(escaped("東京\tA\\B\n\r".as_bytes()), "東京\\tA\\\\B\\n\\r");
        assert_eq!(escaped(b"\x00\x1f\x7f\xff\xe6\x9d"), "\\x00\\x1f\\x7f\\xff\\xe6\\x9d");
        assert_eq!(escaped(b""), "");
    }

    #[test]
    fn c_escapes_name_the_reference_bytes() {
        assert_eq!(escaped_c(b"\x00\x07\x08\t\n\x0b\x0c\r\\"), b"\\0\\a\\b\\t\\n\\v\\f\\r\\\\");
        assert_eq!(escaped_c(b"\x001\x00z\x00\x008"), b"\\x001\\0z\\0\\08");
        assert_eq!(escaped_c(b"\x01\x1f\x7f \xff\xe6"), b"\\x01\\x1f\\x7f \xff\xe6");
    }

    #[test]
    fn unescaping_is_the_exact_inverse() {
        let all: Vec<u8> = (0..=255).collect();
        let mut samples = vec![all.clone(), b"a\\x41".to_vec(), "東\u{7f}京".as_bytes().to_vec(), vec![]];
        samples.push(all.iter().rev().copied().chain("ü".bytes()).collect());
        for data in samples {
            assert_eq!(unescape(escaped(&data).as_bytes()).unwrap(), data);
            assert_eq!(unescape(&escaped_c(&data)).unwrap(), data);
        }
        assert_eq!(unescape(b"\\x4A\\0\\a").unwrap(), b"J\x00\x07");
        assert!(unescape(b"abc\\").unwrap_err().contains("lone backslash"));
        assert!(unescape(b"\\q").unwrap_err().contains("unknown escape \\q"));
        assert!(unescape(b"\\x4").unwrap_err().contains("two hex digits"));
    }

    /// Every byte value, alone and before and after every other, comes back
    /// from both forms.
    #[test]
    fn every_byte_value_round_trips() {
        for a in 0..=255u8 {
            for data in [vec![a]].into_iter().chain((0..=255u8).map(|b| vec![a, b])) {
                assert_eq!(unescape(escaped(&data).as_bytes()).unwrap(), data, "{data:?}");
                assert_eq!(unescape(&escaped_c(&data)).unwrap(), data, "{data:?}");
            }
        }
    }
}

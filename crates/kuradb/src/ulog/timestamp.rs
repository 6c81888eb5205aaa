//! Timestamps of update logs: milliseconds since the Unix epoch, and the
//! expressions the reference's tools take for them.

use crate::error::{Error, ErrorKind, Result};

/// Now, in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Parses a timestamp as the reference's `--timestamp` flags take it: a
/// number of milliseconds, optionally with a unit (`s`, `m`, `h`, `d`, any
/// case; `1.5h`), and if it begins with `+` or `-`, relative to `now` in
/// milliseconds (`-7D` is seven days ago). A result before the epoch is 0.
pub fn parse_timestamp(expr: &str, now: u64) -> Result<u64> {
    let bad = || {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("timestamp {expr:?} is not milliseconds, nor a number with s, m, h or d, nor +/- either"),
        )
    };
    let text = expr.trim().to_ascii_lowercase();
    let (sign, rest) = match text.as_bytes().first() {
        Some(b'+') => (Some(1.0), &text[1..]),
        Some(b'-') => (Some(-1.0), &text[1..]),
        _ => (None, text.as_str()),
    };
    let rest = rest.trim();
    let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
    let scale = match rest[digits..].trim() {
        "" => 1.0,
        "s" => 1e3,
        "m" => 6e4,
        "h" => 3.6e6,
        "d" => 8.64e7,
        _ => return Err(bad()),
    };
    let value = number * scale;
    let ms = match sign {
        Some(sign) => now as f64 + sign * value,
        None => value,
    };
    Ok(ms.max(0.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_absolute_forms() {
        let now = 1_000_000_000;
        assert_eq!(parse_timestamp("1234", now).unwrap(), 1234);
        assert_eq!(parse_timestamp("0", now).unwrap(), 0);
        assert_eq!(parse_timestamp("+0", now).unwrap(), now);
        assert_eq!(parse_timestamp("-7D", now).unwrap(), now - 7 * 86_400_000);
        assert_eq!(parse_timestamp("-3h", now).unwrap(), now - 3 * 3_600_000);
        assert_eq!(parse_timestamp("-1.5m", now).unwrap(), now - 90_000);
        assert_eq!(parse_timestamp("+10s", now).unwrap(), now + 10_000);
        assert_eq!(parse_timestamp("2d", now).unwrap(), 2 * 86_400_000);
        assert_eq!(parse_timestamp("-100000d", now).unwrap(), 0);
        for bad in ["", "x", "-7w", "1.2.3", "7 days"] {
            assert!(parse_timestamp(bad, now).is_err(), "{bad}");
        }
    }
}

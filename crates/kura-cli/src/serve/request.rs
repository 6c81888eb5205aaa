//! Requests out of a connection's input buffer: the `redis-protocol` crate
//! decodes the frames; this module turns each into a command's arguments and
//! guards memory against a client that announces more than it may send.
//!
//! The decoder answers "incomplete" for a frame whose bytes have not all
//! arrived, whatever length it announced. So before more input is read, the
//! length prefixes of the pending frame (`*N` and each `$LEN` so far) are
//! checked against the limit: a client announcing a 1 GB value is refused on
//! its header, before a byte of the value is buffered, and the buffer never
//! holds more than one request of at most the limit.

use bytes::{Bytes, BytesMut};
use redis_protocol::resp2::decode::decode_bytes_mut;
use redis_protocol::resp2::types::BytesFrame;

/// The most arguments one request may have (Redis's own limit).
const MAX_ARGS: u64 = 1024 * 1024;

/// Why a connection's input cannot be served; the client is sent the error
/// and disconnected.
#[derive(Debug, PartialEq, Eq)]
pub struct ProtocolError(pub String);

/// The next complete request in `buf` (consumed from it), `None` if the next
/// one has not fully arrived, or the error that ends the connection.
/// An empty array (`*0`) is skipped, as Redis does.
pub fn next_request(buf: &mut BytesMut, max_request_size: u64) -> Result<Option<Vec<Bytes>>, ProtocolError> {
    loop {
        if buf.is_empty() {
            return Ok(None);
        }
        if buf[0] != b'*' {
            return Err(ProtocolError(format!(
                "ERR Protocol error: expected '*', got '{}' (kura serve takes requests as arrays of bulk \
                 strings, not inline commands)",
                char::from(buf[0]).escape_default()
            )));
        }
        check_pending(buf, max_request_size)?;
        let frame = match decode_bytes_mut(buf) {
            Ok(Some((frame, _, _))) => frame,
            Ok(None) => return Ok(None),
            Err(e) => return Err(ProtocolError(format!("ERR Protocol error: {}", e.details()))),
        };
        let BytesFrame::Array(items) = frame else {
            return Err(ProtocolError("ERR Protocol error: expected an array of bulk strings".into()));
        };
        if items.is_empty() {
            continue;
        }
        let mut args = Vec::with_capacity(items.len());
        for item in items {
            match item {
                BytesFrame::BulkString(b) => args.push(b),
                _ => return Err(ProtocolError("ERR Protocol error: expected '$' for each argument".into())),
            }
        }
        return Ok(Some(args));
    }
}

/// Fails if the frame at the start of `buf` announces more than
/// `max_request_size` bytes or too many arguments, or already holds more.
fn check_pending(buf: &[u8], max_request_size: u64) -> Result<(), ProtocolError> {
    let Some((count, mut at)) = length_line(buf, 0) else {
        return header_not_too_long(buf);
    };
    if count > MAX_ARGS {
        return Err(ProtocolError("ERR Protocol error: invalid multibulk length".into()));
    }
    let mut total = at as u64;
    for _ in 0..count {
        if at >= buf.len() || buf[at] != b'$' {
            break;
        }
        let Some((len, body)) = length_line(buf, at) else {
            return header_not_too_long(&buf[at..]);
        };
        if len > max_request_size {
            return Err(ProtocolError("ERR Protocol error: invalid bulk length".into()));
        }
        total += (body - at) as u64 + len + 2;
        if total > max_request_size {
            return Err(too_large(max_request_size));
        }
        at = body.saturating_add(len as usize + 2);
    }
    if buf.len() as u64 > max_request_size && total > max_request_size {
        return Err(too_large(max_request_size));
    }
    Ok(())
}

fn too_large(limit: u64) -> ProtocolError {
    ProtocolError(format!("ERR Protocol error: request larger than the limit (--max_request_size {limit})"))
}

/// A length line (`*N\r\n` or `$N\r\n`, N ≥ -1) at `at`: the length (0 for
/// -1) and where the line ends, or `None` if it has not fully arrived or is
/// not one (the decoder then reports what is wrong).
fn length_line(buf: &[u8], at: usize) -> Option<(u64, usize)> {
    let rest = &buf[at + 1..];
    let end = rest.iter().take(24).position(|&b| b == b'\r')?;
    if rest.get(end + 1) != Some(&b'\n') {
        return None;
    }
    let text = std::str::from_utf8(&rest[..end]).ok()?;
    let n: i64 = text.parse().ok()?;
    Some((n.max(0) as u64, at + 1 + end + 2))
}

/// A length line longer than any valid one is garbage, not a slow client.
fn header_not_too_long(buf: &[u8]) -> Result<(), ProtocolError> {
    if buf.len() > 24 && !buf[1..].iter().take(24).any(|&b| b == b'\r') {
        return Err(ProtocolError("ERR Protocol error: invalid length line".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(text: &[u8]) -> BytesMut {
        BytesMut::from(text)
    }

    #[test]
    fn decodes_pipelined_requests_and_waits_for_the_rest() {
        let mut b = buf(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPI");
        assert_eq!(
            next_request(&mut b, 1 << 20).unwrap().unwrap(),
            vec![Bytes::from("GET"), Bytes::from("k")]
        );
        assert_eq!(next_request(&mut b, 1 << 20).unwrap(), None);
        b.extend_from_slice(b"NG\r\n");
        assert_eq!(next_request(&mut b, 1 << 20).unwrap().unwrap(), vec![Bytes::from("PING")]);
        assert!(b.is_empty());
    }

    #[test]
    fn refuses_an_announced_bulk_over_the_limit_before_it_arrives() {
        let mut b = buf(b"*2\r\n$3\r\nSET\r\n$1000000000\r\n");
        let err = next_request(&mut b, 512 << 20).unwrap_err();
        assert_eq!(err.0, "ERR Protocol error: invalid bulk length");
        let mut b = buf(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\n");
        assert!(next_request(&mut b, 110).unwrap_err().0.contains("--max_request_size"));
        let mut b = buf(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\n");
        assert_eq!(next_request(&mut b, 200).unwrap(), None);
    }

    #[test]
    fn refuses_garbage_and_huge_counts() {
        assert!(next_request(&mut buf(b"hello\r\n"), 100).is_err());
        assert!(next_request(&mut buf(b"*99999999999\r\n"), 100).is_err());
        assert!(next_request(&mut buf(b"*1\r\n:5\r\n"), 100).is_err());
        assert!(next_request(&mut buf(&[b'*'; 40]), 100).is_err());
        assert!(next_request(&mut buf(b"*1\r\n$x\r\n"), 100).is_err());
    }
}

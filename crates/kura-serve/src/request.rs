//! Requests out of a connection's input buffer: the `redis-protocol` crate
//! decodes the frames; this module turns them into a batch of commands'
//! arguments and guards memory against a client that announces more than
//! it may send.
//!
//! The decoder answers "incomplete" for a frame whose bytes have not all
//! arrived, whatever length it announced. So before more input is read, the
//! length prefixes of the pending frame (`*N` and each `$LEN` so far) are
//! checked against the limit: a client announcing a 1 GB value is refused on
//! its header, before a byte of the value is buffered, and the buffer never
//! holds more than one request of at most the limit. A frame that has fully
//! arrived needs no such look: its size is known.
//!
//! Frames are decoded to ranges of the buffer (the crate's `decode_range`),
//! and the complete requests of one read are split off the buffer together:
//! every word of a batch is a slice of that one piece, so a batch costs a
//! few allocations, not several per request (decoding each frame to owned
//! parts made allocation a large share of a pipelined request's cost;
//! bench/results/2026-11-29-serve.md).

use bytes::{Bytes, BytesMut};
use redis_protocol::resp2::decode::decode_range;
use redis_protocol::resp2::types::RangeFrame;

/// The most arguments one request may have (Redis's own limit).
const MAX_ARGS: u64 = 1024 * 1024;

/// Why a connection's input cannot be served; the client is sent the error
/// and disconnected.
#[derive(Debug, PartialEq, Eq)]
pub struct ProtocolError(pub String);

/// Requests to run together: their words, and where each request's end.
/// Kept by a connection and reused, so its vectors are allocated once.
#[derive(Default)]
pub struct Batch {
    /// Every request's words, one request after the other.
    words: Vec<Bytes>,
    /// Where each request's words end in `words`.
    ends: Vec<usize>,
    /// The words' ranges in the input while it is being decoded.
    ranges: Vec<(usize, usize)>,
}

impl Batch {
    /// The number of requests.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there is no request.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The number of words, all requests together.
    pub fn words(&self) -> usize {
        self.words.len()
    }

    /// The words of request `i` (its command name first).
    pub fn get(&self, i: usize) -> &[Bytes] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.words[start..self.ends[i]]
    }

    /// The requests in order.
    pub fn iter(&self) -> impl Iterator<Item = &[Bytes]> {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Forgets the requests, keeping the room.
    pub fn clear(&mut self) {
        self.words.clear();
        self.ends.clear();
        self.ranges.clear();
    }

    /// Adds the complete requests at the front of `input` (consumed from it)
    /// until the batch holds `max` requests. An empty array (`*0`) is
    /// skipped, as Redis does. The error, if any, is about the input after
    /// the requests added: they are run, and then the connection ends.
    pub fn fill(
        &mut self,
        input: &mut BytesMut,
        max: usize,
        max_request_size: u64,
    ) -> Result<(), ProtocolError> {
        let mut at = 0;
        let mut outcome = Ok(());
        while self.len() < max && at < input.len() {
            match self.decode_one(&input[at..], at, max_request_size) {
                Ok(Some(taken)) => at += taken,
                Ok(None) => break,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        if at > 0 {
            let taken = input.split_to(at).freeze();
            self.words.extend(self.ranges.drain(..).map(|(start, end)| taken.slice(start..end)));
        }
        outcome
    }

    /// Decodes the request at the start of `buf` (at `base` in the input),
    /// noting its words' ranges: the bytes it took, or `None` if it has not
    /// fully arrived (and may still).
    fn decode_one(
        &mut self,
        buf: &[u8],
        base: usize,
        max_request_size: u64,
    ) -> Result<Option<usize>, ProtocolError> {
        if buf[0] != b'*' {
            return Err(ProtocolError(format!(
                "ERR Protocol error: expected '*', got '{}' (kura serve takes requests as arrays of bulk \
                 strings, not inline commands)",
                char::from(buf[0]).escape_default()
            )));
        }
        let (frame, taken) = match decode_range(buf) {
            Ok(Some(decoded)) => decoded,
            Ok(None) => {
                check_pending(buf, max_request_size)?;
                return Ok(None);
            }
            Err(e) => return Err(ProtocolError(format!("ERR Protocol error: {}", e.details()))),
        };
        if taken as u64 > max_request_size {
            // The header check names what is too large (a bulk length, or
            // the whole); it cannot pass on a frame larger than the limit.
            check_pending(buf, max_request_size)?;
            return Err(too_large(max_request_size));
        }
        let RangeFrame::Array(items) = frame else {
            return Err(ProtocolError("ERR Protocol error: expected an array of bulk strings".into()));
        };
        if items.len() as u64 > MAX_ARGS {
            return Err(ProtocolError("ERR Protocol error: invalid multibulk length".into()));
        }
        if items.is_empty() {
            return Ok(Some(taken));
        }
        let mark = self.ranges.len();
        for item in items {
            match item {
                RangeFrame::BulkString((start, end)) => self.ranges.push((base + start, base + end)),
                _ => {
                    self.ranges.truncate(mark);
                    return Err(ProtocolError("ERR Protocol error: expected '$' for each argument".into()));
                }
            }
        }
        self.ends.push(self.words.len() + self.ranges.len());
        Ok(Some(taken))
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

    /// The requests `fill` takes from `input` (at most `max`), and its outcome.
    fn fill(input: &mut BytesMut, max: usize, limit: u64) -> (Vec<Vec<Bytes>>, Result<(), ProtocolError>) {
        let mut batch = Batch::default();
        let outcome = batch.fill(input, max, limit);
        (batch.iter().map(<[Bytes]>::to_vec).collect(), outcome)
    }

    fn words(texts: &[&'static str]) -> Vec<Bytes> {
        texts.iter().map(|t| Bytes::from_static(t.as_bytes())).collect()
    }

    /// The error `fill` ends with on `input`.
    fn refusal(input: &[u8], limit: u64) -> String {
        fill(&mut buf(input), 1024, limit).1.unwrap_err().0
    }

    #[test]
    fn decodes_pipelined_requests_and_waits_for_the_rest() {
        let mut b = buf(
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*0\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n*1\r\n$4\r\nPI",
        );
        let (requests, outcome) = fill(&mut b, 1024, 1 << 20);
        assert_eq!(requests, vec![words(&["GET", "k"]), words(&["SET", "k", ""])]);
        assert_eq!(outcome, Ok(()));
        assert_eq!(&b[..], b"*1\r\n$4\r\nPI", "the partial request stays buffered");
        b.extend_from_slice(b"NG\r\n");
        assert_eq!(fill(&mut b, 1024, 1 << 20).0, vec![words(&["PING"])]);
        assert!(b.is_empty());
    }

    #[test]
    fn stops_at_the_batch_size() {
        let mut b = buf(b"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n");
        assert_eq!(fill(&mut b, 2, 1 << 20).0.len(), 2);
        assert_eq!(&b[..], b"*1\r\n$4\r\nPING\r\n");
    }

    #[test]
    fn runs_the_requests_before_an_error() {
        let mut b = buf(b"*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n:1\r\n");
        let (requests, outcome) = fill(&mut b, 1024, 1 << 20);
        assert_eq!(requests, vec![words(&["PING"])]);
        assert_eq!(outcome.unwrap_err().0, "ERR Protocol error: expected '$' for each argument");
    }

    #[test]
    fn refuses_an_announced_bulk_over_the_limit_before_it_arrives() {
        assert_eq!(
            refusal(b"*2\r\n$3\r\nSET\r\n$1000000000\r\n", 512 << 20),
            "ERR Protocol error: invalid bulk length"
        );
        assert!(refusal(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\n", 110).contains("--max_request_size"));
        let mut b = buf(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\n");
        assert_eq!(fill(&mut b, 1024, 200), (vec![], Ok(())));
    }

    #[test]
    fn refuses_a_complete_request_over_the_limit() {
        let value = "v".repeat(100);
        let request = format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\n{value}\r\n");
        assert!(refusal(request.as_bytes(), 110).contains("--max_request_size"));
        assert_eq!(fill(&mut buf(request.as_bytes()), 1024, 200).0.len(), 1);
    }

    #[test]
    fn refuses_garbage_and_huge_counts() {
        for input in
            [&b"hello\r\n"[..], b"*99999999999\r\n", b"*1\r\n:5\r\n", &[b'*'; 40], b"*1\r\n$x\r\n", b":1\r\n"]
        {
            assert!(fill(&mut buf(input), 1024, 100).1.is_err(), "{input:?}");
        }
        assert!(refusal(b"$1\r\nk\r\n", 100).contains("expected '*'"));
        assert!(refusal(b"*-1\r\n", 100).contains("expected an array"));
    }
}

//! What a command answers, independent of the protocol version, and its
//! encoding as RESP2 or RESP3 frames by the `redis-protocol` crate.

use bytes::{Bytes, BytesMut};
use redis_protocol::resp2::types::{BorrowedFrame as Borrowed2, BytesFrame as Frame2};
use redis_protocol::resp3::types::{BorrowedFrame as Borrowed3, BytesFrame as Frame3, FrameMap};

/// A reply to one command.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// A status line, such as `OK` or `PONG`.
    Status(&'static str),
    /// An error line: its first word is the code clients match (`ERR`,
    /// `NOAUTH`, `READONLY`, `WRONGPASS`, …).
    Error(String),
    /// An integer.
    Int(i64),
    /// A binary-safe string.
    Bulk(Bytes),
    /// No value: a missing key.
    Nil,
    /// No array: EXEC's answer when a watched key changed (`*-1` in RESP2,
    /// `_` in RESP3). Only at the top of a reply.
    NilArray,
    /// A list of replies.
    Array(Vec<Reply>),
    /// Pairs: a RESP3 map, a flat array of keys and values in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// Out-of-band data (a published message, a subscription's
    /// confirmation): a RESP3 push frame, an array in RESP2.
    Push(Vec<Reply>),
    /// Several replies to one command, one after the other (SUBSCRIBE
    /// confirms each channel in a reply of its own). Only at the top.
    Many(Vec<Reply>),
}

impl Reply {
    /// `+OK`.
    pub const OK: Reply = Reply::Status("OK");

    /// An error reply with `text` (which starts with its code).
    pub fn error(text: impl Into<String>) -> Reply {
        Reply::Error(text.into())
    }

    /// A bulk string copied from `data`.
    pub fn bulk(data: impl Into<Bytes>) -> Reply {
        Reply::Bulk(data.into())
    }

    /// A bulk string, or nil for `None`.
    pub fn bulk_or_nil(data: Option<Vec<u8>>) -> Reply {
        data.map_or(Reply::Nil, Reply::bulk)
    }

    /// Whether this is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Appends the reply's encoding in protocol `version` (2 or 3) to `out`.
    pub fn encode(self, version: u8, out: &mut BytesMut) {
        if let Reply::Many(replies) = self {
            for reply in replies {
                reply.encode(version, out);
            }
            return;
        }
        if self == Reply::NilArray {
            out.extend_from_slice(if version >= 3 { b"_\r\n" } else { b"*-1\r\n" });
            return;
        }
        // Encoding a frame built from well-formed parts cannot fail: the
        // crate's only errors are for too small a fixed buffer, and
        // `extend_encode` grows the buffer first.
        if version >= 3 {
            let _ = redis_protocol::resp3::encode::complete::extend_encode(out, &self.into_resp3(), false);
        } else {
            let _ = redis_protocol::resp2::encode::extend_encode(out, &self.into_resp2(), false);
        }
    }

    /// Appends the encoding of a bulk string of `data`, borrowed: a value
    /// read from the database goes straight into the output, without a
    /// copy of its own.
    pub fn encode_bulk(data: &[u8], version: u8, out: &mut BytesMut) {
        // As in `encode`: encoding into a growing buffer cannot fail.
        if version >= 3 {
            let frame = Borrowed3::BlobString { data, attributes: None };
            let _ = redis_protocol::resp3::encode::complete::extend_encode_borrowed(out, &frame, false);
        } else {
            let _ = redis_protocol::resp2::encode::extend_encode_borrowed(
                out,
                &Borrowed2::BulkString(data),
                false,
            );
        }
    }

    fn into_resp2(self) -> Frame2 {
        match self {
            Reply::Status(s) => Frame2::SimpleString(Bytes::from_static(s.as_bytes())),
            Reply::Error(e) => Frame2::Error(one_line(e).into()),
            Reply::Int(n) => Frame2::Integer(n),
            Reply::Bulk(b) => Frame2::BulkString(b),
            Reply::Nil | Reply::NilArray => Frame2::Null,
            Reply::Array(items) | Reply::Push(items) | Reply::Many(items) => {
                Frame2::Array(items.into_iter().map(Reply::into_resp2).collect())
            }
            Reply::Map(pairs) => {
                Frame2::Array(pairs.into_iter().flat_map(|(k, v)| [k.into_resp2(), v.into_resp2()]).collect())
            }
        }
    }

    fn into_resp3(self) -> Frame3 {
        match self {
            Reply::Status(s) => {
                Frame3::SimpleString { data: Bytes::from_static(s.as_bytes()), attributes: None }
            }
            Reply::Error(e) => Frame3::SimpleError { data: one_line(e).into(), attributes: None },
            Reply::Int(n) => Frame3::Number { data: n, attributes: None },
            Reply::Bulk(b) => Frame3::BlobString { data: b, attributes: None },
            Reply::Nil | Reply::NilArray => Frame3::Null,
            Reply::Array(items) | Reply::Many(items) => {
                Frame3::Array { data: items.into_iter().map(Reply::into_resp3).collect(), attributes: None }
            }
            Reply::Push(items) => {
                Frame3::Push { data: items.into_iter().map(Reply::into_resp3).collect(), attributes: None }
            }
            Reply::Map(pairs) => {
                let mut data = FrameMap::with_capacity(pairs.len());
                for (k, v) in pairs {
                    data.insert(k.into_resp3(), v.into_resp3());
                }
                Frame3::Map { data, attributes: None }
            }
        }
    }
}

/// An error line must not break the line protocol: line breaks become spaces.
fn one_line(text: String) -> String {
    if text.contains(['\r', '\n']) {
        text.replace(['\r', '\n'], " ")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(reply: Reply, version: u8) -> Vec<u8> {
        let mut out = BytesMut::new();
        reply.encode(version, &mut out);
        out.to_vec()
    }

    #[test]
    fn encodes_each_kind_in_resp2() {
        assert_eq!(encoded(Reply::OK, 2), b"+OK\r\n");
        assert_eq!(encoded(Reply::error("ERR bad\nthing"), 2), b"-ERR bad thing\r\n");
        assert_eq!(encoded(Reply::Int(-3), 2), b":-3\r\n");
        assert_eq!(encoded(Reply::bulk(&b"ab"[..]), 2), b"$2\r\nab\r\n");
        assert_eq!(encoded(Reply::Nil, 2), b"$-1\r\n");
        assert_eq!(encoded(Reply::NilArray, 2), b"*-1\r\n");
        assert_eq!(encoded(Reply::NilArray, 3), b"_\r\n");
        let map = Reply::Map(vec![(Reply::bulk(&b"k"[..]), Reply::Int(1))]);
        assert_eq!(encoded(map, 2), b"*2\r\n$1\r\nk\r\n:1\r\n");
    }

    #[test]
    fn encodes_a_borrowed_bulk_as_an_owned_one() {
        for version in [2, 3] {
            let mut out = BytesMut::new();
            Reply::encode_bulk(b"ab\r\n", version, &mut out);
            assert_eq!(out.to_vec(), encoded(Reply::bulk(&b"ab\r\n"[..]), version));
        }
    }

    #[test]
    fn pushes_are_arrays_in_resp2_and_many_replies_follow_each_other() {
        let push = || Reply::Push(vec![Reply::bulk(&b"message"[..]), Reply::Int(1)]);
        assert_eq!(encoded(push(), 2), b"*2\r\n$7\r\nmessage\r\n:1\r\n");
        assert_eq!(encoded(push(), 3), b">2\r\n$7\r\nmessage\r\n:1\r\n");
        assert_eq!(encoded(Reply::Many(vec![Reply::OK, Reply::Int(2)]), 2), b"+OK\r\n:2\r\n");
    }

    #[test]
    fn encodes_maps_and_nil_in_resp3() {
        assert_eq!(encoded(Reply::Nil, 3), b"_\r\n");
        let map = Reply::Map(vec![(Reply::bulk(&b"k"[..]), Reply::Int(1))]);
        assert_eq!(encoded(map, 3), b"%1\r\n$1\r\nk\r\n:1\r\n");
    }
}

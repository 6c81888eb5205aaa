//! Nodes of a tree database and their bytes in the node store.
//!
//! A leaf: `0`, the previous and next leaf's ids, the record count, then each
//! record as key length, value length, key, value. An inner node: `1`, the
//! child count, the first child's id, then for each further child its
//! separator key (length, bytes) and id. Numbers are LEB128 varints.

use crate::error::{Error, ErrorKind, Result};

/// Ids of inner nodes start here; leaves count from 1, so the two never meet.
pub(crate) const INNER_BASE: u64 = 1 << 48;

/// The bytes of a record in a leaf besides its key and value (an estimate of
/// the varints, used to size leaves).
const RECORD_OVERHEAD: usize = 3;

#[derive(Clone, Debug)]
pub(crate) enum Node {
    Leaf(Leaf),
    Inner(Inner),
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Leaf {
    pub records: Vec<(Vec<u8>, Vec<u8>)>,
    pub prev: u64,
    pub next: u64,
    /// The bytes the records take, as [`record_size`] counts them.
    pub bytes: usize,
}

/// `keys[i]` is the least key of `children[i + 1]`'s subtree (or a bound
/// below it): a key at or above it goes right.
#[derive(Clone, Debug, Default)]
pub(crate) struct Inner {
    pub keys: Vec<Vec<u8>>,
    pub children: Vec<u64>,
}

pub(crate) fn record_size(key: &[u8], value: &[u8]) -> usize {
    key.len() + value.len() + RECORD_OVERHEAD
}

impl Leaf {
    pub(crate) fn recount(&mut self) {
        self.bytes = self.records.iter().map(|(k, v)| record_size(k, v)).sum();
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads what a node's bytes hold, failing with a message on anything short
/// or malformed.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    pub(crate) fn varint(&mut self) -> std::result::Result<u64, &'static str> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.bytes.get(self.at).ok_or("it ends inside a number")?;
            self.at += 1;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err("a number is too long")
    }

    pub(crate) fn bytes(&mut self, len: u64) -> std::result::Result<&'a [u8], &'static str> {
        let end =
            usize::try_from(len).ok().and_then(|n| self.at.checked_add(n)).ok_or("a length is impossible")?;
        let out = self.bytes.get(self.at..end).ok_or("it ends inside a key or value")?;
        self.at = end;
        Ok(out)
    }

    pub(crate) fn byte(&mut self) -> std::result::Result<u8, &'static str> {
        let b = *self.bytes.get(self.at).ok_or("it is empty")?;
        self.at += 1;
        Ok(b)
    }

    pub(crate) fn done(&self) -> bool {
        self.at == self.bytes.len()
    }
}

impl Node {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        match self {
            Node::Leaf(leaf) => {
                out.push(0);
                put_varint(out, leaf.prev);
                put_varint(out, leaf.next);
                put_varint(out, leaf.records.len() as u64);
                for (k, v) in &leaf.records {
                    put_varint(out, k.len() as u64);
                    put_varint(out, v.len() as u64);
                    out.extend_from_slice(k);
                    out.extend_from_slice(v);
                }
            }
            Node::Inner(inner) => {
                out.push(1);
                put_varint(out, inner.children.len() as u64);
                put_varint(out, inner.children[0]);
                for (key, &child) in inner.keys.iter().zip(&inner.children[1..]) {
                    put_varint(out, key.len() as u64);
                    out.extend_from_slice(key);
                    put_varint(out, child);
                }
            }
        }
    }

    /// Parses node `id`'s bytes; `path` names the file in errors.
    pub(crate) fn decode(id: u64, bytes: &[u8], path: &std::path::Path) -> Result<Node> {
        Node::parse(id, bytes).map_err(|why| {
            Error::new(ErrorKind::BrokenData, format!("node {id} of {} is broken: {why}", path.display()))
        })
    }

    fn parse(id: u64, bytes: &[u8]) -> std::result::Result<Node, &'static str> {
        let mut r = Reader::new(bytes);
        let node = match r.byte()? {
            0 if id < INNER_BASE => {
                let prev = r.varint()?;
                let next = r.varint()?;
                let n = r.varint()?;
                let mut records = Vec::with_capacity(n.min(bytes.len() as u64) as usize);
                for _ in 0..n {
                    let klen = r.varint()?;
                    let vlen = r.varint()?;
                    let key = r.bytes(klen)?.to_vec();
                    let value = r.bytes(vlen)?.to_vec();
                    records.push((key, value));
                }
                let mut leaf = Leaf { records, prev, next, bytes: 0 };
                leaf.recount();
                Node::Leaf(leaf)
            }
            1 if id >= INNER_BASE => {
                let n = r.varint()?;
                if n == 0 {
                    return Err("an inner node has no children");
                }
                let mut children = Vec::with_capacity(n.min(bytes.len() as u64) as usize);
                let mut keys = Vec::with_capacity(children.capacity());
                children.push(r.varint()?);
                for _ in 1..n {
                    let klen = r.varint()?;
                    keys.push(r.bytes(klen)?.to_vec());
                    children.push(r.varint()?);
                }
                Node::Inner(Inner { keys, children })
            }
            _ => return Err("its kind does not match its id"),
        };
        if !r.done() {
            return Err("bytes follow its end");
        }
        Ok(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_round_trip_and_damage_is_an_error() {
        let leaf = Node::Leaf(Leaf {
            records: vec![(b"a".to_vec(), b"1".to_vec()), (Vec::new(), vec![0u8; 300])],
            prev: 3,
            next: 1 << 40,
            bytes: 0,
        });
        let inner = Node::Inner(Inner { keys: vec![b"m".to_vec()], children: vec![1, INNER_BASE + 7] });
        let path = std::path::Path::new("t.kt");
        for (id, node) in [(5, &leaf), (INNER_BASE + 1, &inner)] {
            let mut bytes = Vec::new();
            node.encode(&mut bytes);
            let back = Node::decode(id, &bytes, path).unwrap();
            let mut again = Vec::new();
            back.encode(&mut again);
            assert_eq!(bytes, again);
            for cut in 0..bytes.len() {
                let err = Node::decode(id, &bytes[..cut], path).unwrap_err();
                assert_eq!(err.kind(), ErrorKind::BrokenData, "{err}");
            }
        }
        let mut bytes = Vec::new();
        leaf.encode(&mut bytes);
        assert!(Node::decode(INNER_BASE + 1, &bytes, path).is_err());
    }
}

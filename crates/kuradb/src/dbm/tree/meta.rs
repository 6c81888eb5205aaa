//! The tree's figures (its shape, count and tuning) as the record under the
//! empty key of the node store: `KuraTDB\n`, the key comparator's code, then
//! max_page_size, max_branches, root, first, last, next_leaf, next_inner,
//! level and count as varints.

use std::path::Path;

use super::state::Tree;
use super::KeyComparator;
use crate::dbm::reader::Reader;
use crate::dbm::tree_node::INNER_BASE;
use crate::error::{Error, ErrorKind, Result};
use crate::varint::leb128;

const META_MAGIC: &[u8; 8] = b"KuraTDB\n";

/// The tree's shape: where its root and ends are and which ids come next.
#[derive(Clone, Copy, Debug)]
pub(super) struct Meta {
    pub root: u64,
    pub first: u64,
    pub last: u64,
    pub next_leaf: u64,
    pub next_inner: u64,
    pub level: u32,
}

impl Meta {
    /// The shape of an empty tree: one leaf, id 1, which is the root.
    pub(super) fn empty() -> Meta {
        Meta { root: 1, first: 1, last: 1, next_leaf: 2, next_inner: INNER_BASE, level: 1 }
    }

    /// Appends the figures of `t`, whose shape this is, to `out`.
    pub(super) fn encode(&self, t: &Tree, out: &mut Vec<u8>) {
        out.extend_from_slice(META_MAGIC);
        out.push(t.cmp.code());
        for n in [
            t.max_page_size as u64,
            t.max_branches as u64,
            self.root,
            self.first,
            self.last,
            self.next_leaf,
            self.next_inner,
            u64::from(self.level),
            t.count.load(std::sync::atomic::Ordering::Acquire),
        ] {
            leb128::put(out, n);
        }
    }
}

/// The tree's figures as stored: tuning, shape and count.
pub(super) struct Stored {
    pub cmp: KeyComparator,
    pub max_page_size: usize,
    pub max_branches: usize,
    pub meta: Meta,
    pub count: u64,
}

/// The figures in `bytes`, read from the store of the tree at `path`.
pub(super) fn decode_meta(bytes: &[u8], path: &Path) -> Result<Stored> {
    let parse = || -> std::result::Result<Stored, &'static str> {
        let mut r = Reader::new(bytes);
        if r.bytes(8)? != META_MAGIC {
            return Err("bad magic");
        }
        let cmp = KeyComparator::from_code(r.byte()?).ok_or("unknown key comparator")?;
        let mut n = [0u64; 9];
        for slot in &mut n {
            *slot = r.varint()?;
        }
        let [page, branches, root, first, last, next_leaf, next_inner, level, count] = n;
        if page < 64 || branches < 3 || first == 0 || last == 0 || root == 0 || !r.done() {
            return Err("impossible figures");
        }
        let meta = Meta { root, first, last, next_leaf, next_inner, level: level as u32 };
        Ok(Stored { cmp, max_page_size: page as usize, max_branches: branches as usize, meta, count })
    };
    parse().map_err(|why| {
        Error::new(
            ErrorKind::BrokenData,
            format!("{} is not a kuradb tree database: its figures are broken: {why}", path.display()),
        )
    })
}

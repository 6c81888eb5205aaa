//! Pages: what the tree keeps under one key of its node store, a node or
//! the tree's figures. [`Tree::write_page`] is the one place a page is
//! encoded and stored, [`Tree::read_page`] (and [`Tree::read_pages`], its
//! batch) the one place a page is fetched and decoded: a page codec
//! (compression, encryption of whole pages) goes between the two halves of
//! each.

use super::state::Tree;
use crate::dbm::{Access, Action, Dbm};
use crate::error::Result;

/// The store's key of the tree's figures.
pub(super) const FIGURES_KEY: &[u8] = b"";

/// What a node's record takes besides its page: the record's header and key
/// and the node's own header.
const NODE_READ_SLACK: usize = 64;

/// The store's key of node `id`.
pub(super) fn node_key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

impl Tree {
    /// Stores under `key` the page that `encode` appends to an empty buffer.
    #[inline]
    pub(super) fn write_page(&self, key: &[u8], encode: impl FnOnce(&mut Vec<u8>)) -> Result<()> {
        // Room for a whole page at once: grown by doubling from empty, the
        // buffer went through a dozen sizes a write-back, whose freed
        // chunks scatter holes through the heap between the cached nodes.
        let mut page = Vec::with_capacity(self.max_page_size + NODE_READ_SLACK);
        encode(&mut page);
        self.store.set(key, &page)
    }

    /// What `decode` makes of the page under `key`, decoded straight from the
    /// store's read buffer (no copy of the bytes between); `None` if there
    /// is no such page.
    #[inline]
    pub(super) fn read_page<R>(&self, key: &[u8], mut decode: impl FnMut(&[u8]) -> R) -> Result<Option<R>> {
        let mut decoded = None;
        self.store.process(key, Access::ReadOnly, &mut |page| {
            decoded = page.map(&mut decode);
            Action::Keep
        })?;
        Ok(decoded)
    }

    /// What `decode` makes of the pages under `keys` (given each key's
    /// index), `None` for each key without a page: [`Tree::read_page`] for
    /// many keys, read by one multi-key read of the store, so that the
    /// store can send their device reads together. Each page is decoded
    /// straight from the store's read buffer, as `read_page` does: a copy
    /// of every page first (what `get_multi` hands out) cost an allocation
    /// and a copy of a whole page per leaf of a batch.
    pub(super) fn read_pages<K: AsRef<[u8]>, R>(
        &self,
        keys: &[K],
        mut decode: impl FnMut(usize, &[u8]) -> R,
    ) -> Result<Vec<Option<R>>> {
        if let [key] = keys {
            return Ok(vec![self.read_page(key.as_ref(), |page| decode(0, page))?]);
        }
        let refs: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        let mut decoded: Vec<Option<R>> = std::iter::repeat_with(|| None).take(keys.len()).collect();
        self.store.process_multi(&refs, Access::ReadOnly, &mut |i, _, page| {
            decoded[i] = page.map(|p| decode(i, p));
            Action::Keep
        })?;
        Ok(decoded)
    }

    /// Makes a node's first read take a whole page, with room for the
    /// record's and the node's headers, so that it is one read call; the
    /// store's reads are at least `least` bytes as before.
    pub(super) fn read_pages_whole(&mut self, least: usize) {
        self.store.set_min_read_size(least.max(self.max_page_size + NODE_READ_SLACK));
    }
}

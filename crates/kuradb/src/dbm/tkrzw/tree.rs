//! The reference's TreeDBM file (`.tkt`): a hash file (see [`super::hash`])
//! whose records are the tree's pages, keyed by their 6-byte page id, with
//! the tree's own metadata in the hash header's opaque area.
//!
//! ```text
//! metadata (in the opaque area, numbers big-endian):
//!   0 "TDB"  4 num_records (6)  10 eff_data_size (6)  16 root id (6)
//!   22 first leaf id (6)  28 last leaf id (6)  34 leaf count (6)
//!   40 inner node count (6)  46 max_page_size (3)  49 max_branches (3)
//!   52 tree level (1)  53 key comparator (1: lexical, 2: lexical ignoring
//!   case, 3: decimal, 4: hexadecimal, 5: real number, 101-105: the pair
//!   forms of those, 0: a custom function)
//! leaf page (ids from 1):   previous leaf id (6), next leaf id (6), then
//!                           per record: key size (varint), key, value
//!                           size (varint), value; in comparator order
//! inner page (ids from 3 << 46): heir id (6), then per link: key size
//!                           (varint), key, child id (6)
//! ```
//!
//! A file closed cleanly is read by following the leaves from the first;
//! one whose writer was killed is salvaged from every leaf page the hash
//! replay finds (the leaf chain may be half written), later pages winning
//! a key both hold.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use super::bytes::{broken, fixnum, Bytes};
use super::dbm::Record;
use super::hash::{self, Damage, HashHeader};
use crate::dbm::comparator::KeyComparator;
use crate::error::{Error, ErrorKind, Result};

const PAGE_ID_WIDTH: usize = 6;
const INNER_ID_BASE: u64 = 3 << 46;

/// The tree's metadata.
#[derive(Clone, Debug)]
pub(super) struct TreeMeta {
    pub num_records: u64,
    pub eff_data_size: u64,
    pub root_id: u64,
    pub first_id: u64,
    pub last_id: u64,
    pub num_leaves: u64,
    pub num_inners: u64,
    pub max_page_size: u64,
    pub max_branches: u64,
    pub level: u8,
    pub comparator_code: u8,
}

impl TreeMeta {
    fn parse(opaque: &[u8]) -> Result<TreeMeta> {
        if opaque.len() < 54 || !opaque.starts_with(b"TDB") {
            return Err(broken("its tree metadata is missing (no \"TDB\" mark in the header)".to_string()));
        }
        let f = |at: usize, width: usize| fixnum(&opaque[at..at + width]);
        Ok(TreeMeta {
            num_records: f(4, 6),
            eff_data_size: f(10, 6),
            root_id: f(16, 6),
            first_id: f(22, 6),
            last_id: f(28, 6),
            num_leaves: f(34, 6),
            num_inners: f(40, 6),
            max_page_size: f(46, 3),
            max_branches: f(49, 3),
            level: opaque[52],
            comparator_code: opaque[53],
        })
    }

    /// The reference's name of the comparator.
    pub fn comparator_name(&self) -> String {
        let base = match self.comparator_code % 100 {
            1 => "LexicalKeyComparator",
            2 => "LexicalCaseKeyComparator",
            3 => "DecimalKeyComparator",
            4 => "HexadecimalKeyComparator",
            5 => "RealNumberKeyComparator",
            6 => "SignedBigEndianKeyComparator",
            7 => "FloatBigEndianKeyComparator",
            _ => return format!("a custom comparator (code {})", self.comparator_code),
        };
        if self.comparator_code > 100 {
            format!("Pair{base}")
        } else {
            base.to_string()
        }
    }

    /// kuradb's comparator of the same order, or an error naming the one
    /// the file uses that kuradb lacks.
    pub fn comparator(&self) -> Result<KeyComparator> {
        match self.comparator_code {
            1 => Ok(KeyComparator::Lexical),
            3 => Ok(KeyComparator::Decimal),
            4 => Ok(KeyComparator::Hex),
            5 => Ok(KeyComparator::Real),
            // Pairs are encoded as kuradb encodes an index's records.
            101 => Ok(KeyComparator::PairLexical),
            103 => Ok(KeyComparator::PairDecimal),
            104 => Ok(KeyComparator::PairHex),
            105 => Ok(KeyComparator::PairReal),
            _ => Err(Error::new(
                ErrorKind::NotImplemented,
                format!(
                    "its keys are ordered by {}, which kuradb does not have (it has the lexical, decimal, \
                     hexadecimal and real-number orders and their pair forms)",
                    self.comparator_name()
                ),
            )),
        }
    }
}

/// The records of a reference tree file, in the comparator's order.
pub(super) struct TreeRecords {
    pub header: HashHeader,
    pub meta: TreeMeta,
    pub records: Vec<Record>,
    pub damage: Option<Damage>,
}

/// Reads the tree file `data`; `salvage` reads every leaf page of a file
/// whose writer was killed, which a clean file does not need.
pub(super) fn read(data: &[u8], salvage: bool) -> Result<TreeRecords> {
    let header = HashHeader::parse(data)?;
    let meta = TreeMeta::parse(&header.opaque)?;
    let comparator = meta.comparator()?;
    let salvage = salvage || !header.healthy;
    let (pages, damage) = hash::replay(data, &header, salvage)?;
    // A page is a hash value: decompressed already if the file's are.
    let mut by_id: HashMap<u64, Cow<[u8]>> = HashMap::with_capacity(pages.len());
    for (_, key, value) in pages {
        if key.len() != PAGE_ID_WIDTH {
            return Err(broken(format!("a page's id is {} bytes, not {PAGE_ID_WIDTH}", key.len())));
        }
        by_id.insert(fixnum(key), value);
    }
    let records = if salvage {
        let mut leaves: Vec<u64> = by_id.keys().copied().filter(|&id| id < INNER_ID_BASE).collect();
        leaves.sort_unstable();
        let mut all: HashMap<&[u8], &[u8]> = HashMap::new();
        for id in leaves {
            // A page torn by the crash is skipped whole: its records are lost.
            if let Ok((_, _, records)) = parse_leaf(&by_id[&id]) {
                all.extend(records);
            }
        }
        let mut records: Vec<(&[u8], &[u8])> = all.into_iter().collect();
        records.sort_by(|a, b| comparator.compare(a.0, b.0));
        records
    } else {
        walk_leaves(&by_id, &meta)?
    };
    let records = records.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
    Ok(TreeRecords { header, meta, records, damage: salvage.then_some(damage) })
}

/// Every record of the leaves, following the chain from the first leaf.
fn walk_leaves<'a>(by_id: &'a HashMap<u64, Cow<[u8]>>, meta: &TreeMeta) -> Result<Vec<(&'a [u8], &'a [u8])>> {
    // The metadata's count is a claim: a record takes two bytes at least
    // (its two sizes), so the pages bound what is worth reserving.
    let room = by_id.values().map(|page| page.len() as u64 / 2).sum::<u64>();
    let mut records = Vec::with_capacity(meta.num_records.min(room) as usize);
    let mut seen = HashSet::new();
    let mut id = meta.first_id;
    let mut prev = 0;
    while id != 0 {
        if id >= INNER_ID_BASE || !seen.insert(id) {
            return Err(broken(format!("its leaf chain loops or leaves the leaves at page {id}")));
        }
        let page = by_id.get(&id).ok_or_else(|| broken(format!("its leaf page {id} is missing")))?;
        let (prev_id, next_id, page_records) =
            parse_leaf(page).map_err(|e| broken(format!("its leaf page {id}: {}", e.message())))?;
        if prev_id != prev {
            return Err(broken(format!("its leaf page {id} says its previous is {prev_id}, not {prev}")));
        }
        records.extend(page_records);
        prev = id;
        id = next_id;
    }
    if records.len() as u64 != meta.num_records {
        return Err(broken(format!(
            "its leaves hold {} records but its metadata says {}",
            records.len(),
            meta.num_records
        )));
    }
    Ok(records)
}

type Leaf<'a> = (u64, u64, Vec<(&'a [u8], &'a [u8])>);

fn parse_leaf(page: &[u8]) -> Result<Leaf<'_>> {
    let mut b = Bytes::new(page);
    let prev = b.fixnum(PAGE_ID_WIDTH, "the previous leaf's id")?;
    let next = b.fixnum(PAGE_ID_WIDTH, "the next leaf's id")?;
    let mut records = Vec::new();
    while b.remaining() > 0 {
        let key = b.sized("a record's key")?;
        let value = b.sized("a record's value")?;
        records.push((key, value));
    }
    Ok((prev, next, records))
}

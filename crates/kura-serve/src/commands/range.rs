//! RANGE, the range scan of ordered databases (tree, skip, baby, stdtree):
//!
//! `RANGE min max [REV] [LIMIT count] [NOVALUES]`
//!
//! answers the records whose keys lie between `min` and `max`, in the
//! database's key order (descending with REV), as a flat array `key value
//! key value …` (keys only with NOVALUES). The bounds are written as
//! ZRANGEBYLEX writes them: `[key` includes the key, `(key` excludes it,
//! `-` is below every key and `+` above. `min` is always the lower bound,
//! REV or not. LIMIT caps the records answered.

use std::cmp::Ordering;

use bytes::Bytes;
use kuradb::dbm::comparator::KeyComparator;
use kuradb::dbm::{Cursor, Edge};

use super::{db_error, is, not_an_integer, parse_int, syntax_error, Ctx};
use crate::reply::Reply;

/// One end of a range.
#[derive(Debug, PartialEq)]
enum Bound {
    Unbounded,
    Included(Bytes),
    Excluded(Bytes),
}

fn bound(arg: &Bytes, infinite: u8) -> Option<Bound> {
    match arg.first()? {
        b'-' | b'+' if arg.len() == 1 => (arg[0] == infinite).then_some(Bound::Unbounded),
        b'[' => Some(Bound::Included(arg.slice(1..))),
        b'(' => Some(Bound::Excluded(arg.slice(1..))),
        _ => None,
    }
}

/// Whether `key` is on the inner side of `bound`; `side` is the ordering
/// of a key beyond it (Greater for an upper bound).
fn within(order: KeyComparator, key: &[u8], bound: &Bound, side: Ordering) -> bool {
    match bound {
        Bound::Unbounded => true,
        Bound::Included(b) => order.compare(key, b) != side,
        Bound::Excluded(b) => order.compare(key, b) == side.reverse(),
    }
}

pub fn range(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let database = &ctx.server.databases[ctx.session.db];
    if !database.ordered {
        return Reply::error(format!(
            "ERR RANGE needs an ordered database (tree, skip, baby, stdtree); database {} keeps no key order",
            ctx.session.db
        ));
    }
    let (Some(min), Some(max)) = (bound(&args[1], b'-'), bound(&args[2], b'+')) else {
        return Reply::error("ERR min or max not valid string range item");
    };
    let (mut reverse, mut limit, mut values) = (false, usize::MAX, true);
    let mut i = 3;
    while i < args.len() {
        if is(&args[i], "REV") {
            reverse = true;
        } else if is(&args[i], "NOVALUES") {
            values = false;
        } else if is(&args[i], "LIMIT") && i + 1 < args.len() {
            i += 1;
            match parse_int(&args[i]) {
                Some(n) if n >= 0 => limit = n as usize,
                Some(_) => return syntax_error(),
                None => return not_an_integer(),
            }
        } else {
            return syntax_error();
        }
        i += 1;
    }
    let order = database.order;
    let mut out = Vec::new();
    let outcome = (|| -> kuradb::Result<()> {
        let view = ctx.data();
        let mut cursor = view.iter()?;
        let (start, end, side) =
            if reverse { (&max, &min, Ordering::Less) } else { (&min, &max, Ordering::Greater) };
        position(cursor.as_mut(), start, reverse)?;
        let mut taken = 0;
        while taken < limit {
            let Some((key, value)) = cursor.get()? else { break };
            if !within(order, &key, end, side) {
                break;
            }
            out.push(Reply::bulk(key));
            if values {
                out.push(Reply::bulk(value));
            }
            taken += 1;
            if reverse {
                cursor.previous()?;
            } else {
                cursor.next()?;
            }
        }
        Ok(())
    })();
    outcome.map_or_else(db_error, |()| Reply::Array(out))
}

/// Puts `cursor` on the first record inside `start`, walking forward (or
/// backward with `reverse`).
fn position(cursor: &mut dyn Cursor, start: &Bound, reverse: bool) -> kuradb::Result<()> {
    match (start, reverse) {
        (Bound::Unbounded, false) => cursor.first(),
        (Bound::Unbounded, true) => cursor.last(),
        (Bound::Included(k), false) => cursor.jump_upper(k, Edge::Inclusive),
        (Bound::Excluded(k), false) => cursor.jump_upper(k, Edge::Exclusive),
        (Bound::Included(k), true) => cursor.jump_lower(k, Edge::Inclusive),
        (Bound::Excluded(k), true) => cursor.jump_lower(k, Edge::Exclusive),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bounds_as_zrangebylex_does() {
        assert_eq!(bound(&Bytes::from("-"), b'-'), Some(Bound::Unbounded));
        assert_eq!(bound(&Bytes::from("+"), b'-'), None);
        assert_eq!(bound(&Bytes::from("[a"), b'-'), Some(Bound::Included(Bytes::from("a"))));
        assert_eq!(bound(&Bytes::from("(a"), b'+'), Some(Bound::Excluded(Bytes::from("a"))));
        assert_eq!(bound(&Bytes::from("a"), b'+'), None);
        let lex = KeyComparator::Lexical;
        assert!(within(lex, b"b", &Bound::Included(Bytes::from("b")), Ordering::Greater));
        assert!(!within(lex, b"b", &Bound::Excluded(Bytes::from("b")), Ordering::Greater));
        assert!(within(lex, b"a", &Bound::Excluded(Bytes::from("b")), Ordering::Greater));
        assert!(within(lex, b"c", &Bound::Excluded(Bytes::from("b")), Ordering::Less));
    }
}

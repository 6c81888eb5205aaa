//! The reference's `Increment`, which the compat layers answer as it does.
//!
//! kuradb's own [`Dbm::increment`] takes only a stored value of exactly 8
//! bytes and refuses any other, so that a value that was never a counter is
//! not silently read as one. The reference reads any value: its first 8
//! bytes (all of a shorter one, nothing of an empty one) as an unsigned
//! big-endian number, and then stores the sum as 8 bytes. A program written
//! for the reference may count on that, so the compat layers take this rule
//! and the idiomatic ones keep kuradb's.

use std::borrow::Cow;

use kuradb::dbm::{Access, Action, Dbm, INCREMENT_UNCHANGED};

/// The number the reference reads from a stored value: its first 8 bytes
/// (all of a shorter one) as an unsigned big-endian number, taken as the
/// signed number of the same 64 bits.
pub fn reference_number(value: &[u8]) -> i64 {
    let n = value.iter().take(8).fold(0u64, |n, &b| (n << 8) | u64::from(b));
    i64::from_be_bytes(n.to_be_bytes())
}

/// Adds `delta` to the number of `key` as the reference reads it (see
/// [`reference_number`]), or to `initial` if the key is absent, stores the
/// sum as 8 big-endian bytes and answers it. [`INCREMENT_UNCHANGED`] answers
/// the number and changes nothing (an absent key stays absent), as in
/// [`Dbm::increment`].
pub fn reference_increment<D: Dbm + ?Sized>(
    db: &D,
    key: &[u8],
    delta: i64,
    initial: i64,
) -> kuradb::Result<i64> {
    let mut result = initial;
    db.process(key, Access::ReadWrite, &mut |old| {
        let current = old.map_or(initial, reference_number);
        if delta == INCREMENT_UNCHANGED {
            result = current;
            return Action::Keep;
        }
        result = current.wrapping_add(delta);
        Action::Set(Cow::Owned(result.to_be_bytes().to_vec()))
    })?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuradb::dbm::tiny::{TinyDbm, TinyOptions};

    #[test]
    fn shorter_and_longer_values_count_from_their_big_endian_head() {
        assert_eq!(reference_number(b""), 0);
        assert_eq!(reference_number(b"\x05"), 5);
        assert_eq!(reference_number(b"\xff"), 255);
        assert_eq!(reference_number(b"\x01\x00"), 256);
        assert_eq!(reference_number(b"abc"), 0x61_6263);
        assert_eq!(reference_number(&[0, 0, 0, 0, 0, 0, 0, 0, 7]), 0);
        assert_eq!(reference_number(&[1, 0, 0, 0, 0, 0, 0, 0, 7]), 1 << 56);
        assert_eq!(reference_number(&[0xff; 8]), -1);
    }

    #[test]
    fn increments_store_eight_bytes_and_reads_change_nothing() {
        let db = TinyDbm::new(&TinyOptions::default());
        db.set(b"short", b"\x01\x00").unwrap();
        assert_eq!(reference_increment(&db, b"short", 1, 0).unwrap(), 257);
        assert_eq!(db.get(b"short").unwrap().unwrap(), 257i64.to_be_bytes());
        db.set(b"long", b"01234567tail").unwrap();
        assert_eq!(reference_increment(&db, b"long", INCREMENT_UNCHANGED, 0).unwrap(), 0x3031_3233_3435_3637);
        assert_eq!(db.get(b"long").unwrap().as_deref(), Some(&b"01234567tail"[..]));
        assert_eq!(reference_increment(&db, b"long", 1, 0).unwrap(), 0x3031_3233_3435_3638);
        assert_eq!(db.get(b"long").unwrap().as_deref(), Some(&b"01234568"[..]));
        assert_eq!(reference_increment(&db, b"empty", INCREMENT_UNCHANGED, 7).unwrap(), 7);
        assert_eq!(db.get(b"empty").unwrap(), None);
        db.set(b"empty", b"").unwrap();
        assert_eq!(reference_increment(&db, b"empty", 3, 7).unwrap(), 3);
        assert_eq!(reference_increment(&db, b"absent", 3, 7).unwrap(), 10);
        db.set(b"max", &i64::MAX.to_be_bytes()).unwrap();
        assert_eq!(reference_increment(&db, b"max", 1, 0).unwrap(), i64::MIN);
    }
}

//! The two forms round-trip, write the bytes the copies they replaced wrote
//! and read what those copies read, and follow the one decoding rule.

use proptest::prelude::*;

use super::{base128, leb128, VarintError, MAX_LEN};

/// The LEB128 writer every kuradb format used.
fn old_leb128_put(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The LEB128 reader of the databases' records (it let a tenth byte's
/// high bits drop).
fn old_leb128_get(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        n |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

/// The update log's writer of the reference's numbers.
fn old_base128_put(out: &mut Vec<u8>, n: u64) {
    let groups = (64 - (n | 1).leading_zeros() as usize).div_ceil(7);
    for i in (0..groups).rev() {
        let group = ((n >> (7 * i)) & 0x7f) as u8;
        out.push(if i == 0 { group } else { group | 0x80 });
    }
}

/// The flat-record writer of the reference's numbers.
fn old_flat_record_put(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; MAX_LEN];
    let mut len = 0;
    loop {
        digits[len] = (n & 0x7f) as u8;
        len += 1;
        n >>= 7;
        if n == 0 {
            break;
        }
    }
    for (i, d) in digits[..len].iter().rev().enumerate() {
        out.push(if i + 1 < len { d | 0x80 } else { *d });
    }
}

/// The update log's reader of the reference's numbers.
fn old_base128_get(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut n = 0u64;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if n >> 57 != 0 {
            return None;
        }
        n = (n << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            return Some(n);
        }
    }
}

/// Numbers of every length, each side of each byte boundary included.
fn numbers() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        (0u32..64).prop_map(|bits| 1u64 << bits),
        (1u32..=64).prop_map(|bits| u64::MAX >> (64 - bits)),
        0u64..300,
    ]
}

proptest! {
    #[test]
    fn leb128_round_trips_and_writes_the_old_bytes(n in numbers(), tail in proptest::collection::vec(any::<u8>(), 0..4)) {
        let mut old = Vec::new();
        old_leb128_put(&mut old, n);
        let mut out = Vec::new();
        leb128::put(&mut out, n);
        prop_assert_eq!(&out, &old);
        prop_assert_eq!(out.len(), leb128::len(n));
        let mut slice = [0u8; MAX_LEN];
        prop_assert_eq!(leb128::write(&mut slice, n), out.len());
        prop_assert_eq!(&slice[..out.len()], &out[..]);
        out.extend_from_slice(&tail);
        let (mut at, mut old_at) = (0, 0);
        prop_assert_eq!(leb128::decode(&out, &mut at), Ok(n));
        prop_assert_eq!(old_leb128_get(&out, &mut old_at), Some(n));
        prop_assert_eq!(at, old_at);
        let mut decoder = leb128::Decoder::default();
        let pushed: Vec<_> = out[..at].iter().map(|&b| decoder.push(b)).collect();
        prop_assert_eq!(pushed.last(), Some(&Ok(Some(n))));
        prop_assert!(pushed[..at - 1].iter().all(|p| *p == Ok(None)));
    }

    #[test]
    fn base128_round_trips_and_writes_the_old_bytes(n in numbers(), tail in proptest::collection::vec(any::<u8>(), 0..4)) {
        let mut old = Vec::new();
        old_base128_put(&mut old, n);
        let mut flat = Vec::new();
        old_flat_record_put(&mut flat, n);
        prop_assert_eq!(&flat, &old);
        let mut out = Vec::new();
        base128::put(&mut out, n);
        prop_assert_eq!(&out, &old);
        prop_assert_eq!(out.len(), base128::len(n));
        let mut slice = [0u8; MAX_LEN];
        prop_assert_eq!(base128::write(&mut slice, n), out.len());
        prop_assert_eq!(&slice[..out.len()], &out[..]);
        out.extend_from_slice(&tail);
        let (mut at, mut old_at) = (0, 0);
        prop_assert_eq!(base128::decode(&out, &mut at), Ok(n));
        prop_assert_eq!(old_base128_get(&out, &mut old_at), Some(n));
        prop_assert_eq!(at, old_at);
        let mut decoder = base128::Decoder::default();
        let pushed: Vec<_> = out[..at].iter().map(|&b| decoder.push(b)).collect();
        prop_assert_eq!(pushed.last(), Some(&Ok(Some(n))));
        prop_assert!(pushed[..at - 1].iter().all(|p| *p == Ok(None)));
    }

    /// On any bytes, the new readers answer what the old ones answered
    /// wherever the old ones read a number of at most ten bytes whose value
    /// fits, and fail only where they failed or the rule now refuses.
    #[test]
    fn decoders_agree_with_the_old_ones_on_valid_input(bytes in proptest::collection::vec(any::<u8>(), 0..14)) {
        let (mut at, mut old_at) = (0, 0);
        match (leb128::decode(&bytes, &mut at), old_leb128_get(&bytes, &mut old_at)) {
            (Ok(n), old) => prop_assert_eq!((Some(n), at), (old, old_at)),
            (Err(VarintError::Truncated), old) => prop_assert_eq!(old, None),
            (Err(VarintError::Overflow), _) => prop_assert!(bytes.len() >= MAX_LEN && bytes[MAX_LEN - 1] > 1),
        }
        let (mut at, mut old_at) = (0, 0);
        match (base128::decode(&bytes, &mut at), old_base128_get(&bytes, &mut old_at)) {
            (Ok(n), old) => prop_assert_eq!((Some(n), at), (old, old_at)),
            (Err(VarintError::Truncated), old) => prop_assert_eq!(old, None),
            (Err(VarintError::Overflow), old) => prop_assert!(old.is_none() || old_at > MAX_LEN),
        }
    }

    #[test]
    fn padded_leb128_reads_back(n in 0u64..1 << 35, extra in 0usize..4) {
        let len = (leb128::len(n) + extra).min(MAX_LEN);
        let mut out = Vec::new();
        leb128::put_padded(&mut out, n, len);
        prop_assert_eq!(out.len(), len);
        let mut at = 0;
        prop_assert_eq!(leb128::decode(&out, &mut at), Ok(n));
        prop_assert_eq!(at, len);
    }
}

#[test]
fn the_forms_take_their_byte_orders() {
    for (n, le, be) in [
        (0u64, &[0u8][..], &[0u8][..]),
        (127, &[0x7f], &[0x7f]),
        (128, &[0x80, 0x01], &[0x81, 0x00]),
        (300, &[0xac, 0x02], &[0x82, 0x2c]),
        (
            u64::MAX,
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            &[0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
        ),
    ] {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        leb128::put(&mut a, n);
        base128::put(&mut b, n);
        assert_eq!((&a[..], &b[..]), (le, be), "{n}");
    }
}

/// A number that would pass 64 bits or ten bytes is an error, never a
/// wrapped value; bytes that end inside one say so.
#[test]
fn overflow_is_an_error_in_both_forms() {
    use VarintError::{Overflow, Truncated};
    let le = |bytes: &[u8]| leb128::decode(bytes, &mut 0);
    let be = |bytes: &[u8]| base128::decode(bytes, &mut 0);
    // The largest ten-byte numbers fit; one bit more does not.
    let mut top = vec![0xff; 9];
    top.push(0x01);
    assert_eq!(le(&top), Ok(u64::MAX));
    *top.last_mut().unwrap() = 0x02;
    assert_eq!(le(&top), Err(Overflow));
    *top.last_mut().unwrap() = 0x7f;
    assert_eq!(le(&top), Err(Overflow));
    assert_eq!(le(&[0xff; 11]), Err(Overflow));
    assert_eq!(le(&[0x80; 10]), Err(Overflow));
    let mut top = vec![0x81];
    top.extend_from_slice(&[0xff; 8]);
    top.push(0x7f);
    assert_eq!(be(&top), Ok(u64::MAX));
    top[0] = 0x82;
    assert_eq!(be(&top), Err(Overflow));
    assert_eq!(be(&[0xff; 11]), Err(Overflow));
    // Ten bytes of leading zero groups and more: too long, whatever the value.
    let mut long = vec![0x80; 10];
    long.push(0x05);
    assert_eq!(be(&long), Err(Overflow));
    // A longer form than needed within ten bytes is its value.
    assert_eq!(le(&[0x85, 0x80, 0x00]), Ok(5));
    assert_eq!(be(&[0x80, 0x80, 0x05]), Ok(5));
    // Cut short.
    for bytes in [&[][..], &[0x80], &[0xff, 0xff]] {
        assert_eq!(le(bytes), Err(Truncated), "{bytes:?}");
        assert_eq!(be(bytes), Err(Truncated), "{bytes:?}");
    }
    assert_eq!(Overflow.to_string(), "a number does not fit in 64 bits");
    assert_eq!(Truncated.to_string(), "a number is cut short");
}

#[test]
fn varints_round_trip_and_know_their_length() {
    for n in [0u64, 1, 127, 128, 300, 16_383, 16_384, u32::MAX.into(), u64::MAX] {
        let mut out = Vec::new();
        leb128::put(&mut out, n);
        assert_eq!(out.len(), leb128::len(n), "{n}");
        let mut slice = [0u8; 10];
        assert_eq!(leb128::write(&mut slice, n), out.len(), "{n}");
        assert_eq!(&slice[..out.len()], &out[..], "{n}");
        let mut at = 0;
        assert_eq!(leb128::decode(&out, &mut at), Ok(n));
        assert_eq!(at, out.len());
        assert_eq!(leb128::decode(&out[..out.len() - 1], &mut 0).ok(), None.filter(|_: &u64| out.len() == 1));
    }
    assert!(leb128::decode(&[0xff; 11], &mut 0).is_err());
}

#[test]
fn numbers_take_the_reference_byte_order() {
    for (n, bytes) in
        [(0u64, &[0u8][..]), (4, &[4]), (127, &[0x7f]), (200, &[0x81, 0x48]), (300, &[0x82, 0x2c])]
    {
        let mut out = Vec::new();
        base128::put(&mut out, n);
        assert_eq!(out, bytes, "{n}");
        let mut pos = 0;
        assert_eq!(base128::decode(&out, &mut pos), Ok(n));
        assert_eq!(pos, out.len());
    }
    let mut out = Vec::new();
    base128::put(&mut out, u64::MAX);
    assert_eq!(base128::decode(&out, &mut 0), Ok(u64::MAX));
    assert!(base128::decode(&[0x81], &mut 0).is_err());
    assert!(base128::decode(&[0xff; 11], &mut 0).is_err());
}

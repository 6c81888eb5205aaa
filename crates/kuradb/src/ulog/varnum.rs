//! The variable-length numbers of the reference's update-log entries: seven
//! bits a byte, most significant group first, the high bit set on every byte
//! but the last (300 is `82 2c`). This is not the order of the varints in
//! kuradb's own database files (`dbm/varint.rs`), which go least significant
//! first; an entry must match the reference's bytes to be read by its tools.

/// Appends `n`.
pub(crate) fn put(out: &mut Vec<u8>, n: u64) {
    let groups = (64 - (n | 1).leading_zeros() as usize).div_ceil(7);
    for i in (0..groups).rev() {
        let group = ((n >> (7 * i)) & 0x7f) as u8;
        out.push(if i == 0 { group } else { group | 0x80 });
    }
}

/// Reads a number at `*pos`, moving past it; `None` if the bytes end inside
/// it or it does not fit in 64 bits.
pub(crate) fn get(buf: &[u8], pos: &mut usize) -> Option<u64> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_take_the_reference_byte_order() {
        for (n, bytes) in
            [(0u64, &[0u8][..]), (4, &[4]), (127, &[0x7f]), (200, &[0x81, 0x48]), (300, &[0x82, 0x2c])]
        {
            let mut out = Vec::new();
            put(&mut out, n);
            assert_eq!(out, bytes, "{n}");
            let mut pos = 0;
            assert_eq!(get(&out, &mut pos), Some(n));
            assert_eq!(pos, out.len());
        }
        let mut out = Vec::new();
        put(&mut out, u64::MAX);
        assert_eq!(get(&out, &mut 0), Some(u64::MAX));
        assert_eq!(get(&[0x81], &mut 0), None);
        assert_eq!(get(&[0xff; 11], &mut 0), None);
    }
}

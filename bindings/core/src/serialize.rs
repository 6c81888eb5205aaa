//! The reference's `Utility` serialization of numbers: big-endian binary
//! sequences, as its `SerializeInt`, `DeserializeInt`, `SerializeFloat` and
//! `DeserializeFloat` make and read them.

/// An integer as 8 big-endian bytes.
pub fn serialize_int(num: i64) -> [u8; 8] {
    num.to_be_bytes()
}

/// The integer of up to the first 8 bytes of `data`, big-endian; fewer
/// bytes read as an unsigned number of that many bytes, as the reference
/// reads them (an empty sequence is 0).
pub fn deserialize_int(data: &[u8]) -> i64 {
    let used = &data[..data.len().min(8)];
    used.iter().fold(0u64, |num, &b| (num << 8) | u64::from(b)) as i64
}

/// A floating-point number as 8 big-endian bytes (an IEEE double).
pub fn serialize_float(num: f64) -> [u8; 8] {
    num.to_be_bytes()
}

/// The number of a big-endian IEEE single (4 bytes) or double (8 bytes);
/// any other length is NaN, as the reference answers for a sequence it
/// cannot read (its 16-byte `long double` is not portable, so it is not
/// read either).
pub fn deserialize_float(data: &[u8]) -> f64 {
    match data.len() {
        4 => f64::from(f32::from_be_bytes([data[0], data[1], data[2], data[3]])),
        8 => f64::from_be_bytes(data.try_into().expect("eight bytes")),
        _ => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_big_endian() {
        assert_eq!(serialize_int(1), [0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(deserialize_int(&serialize_int(-123_456_789)), -123_456_789);
        assert_eq!(deserialize_int(&[0xff]), 255);
        assert_eq!(deserialize_int(&[]), 0);
        assert_eq!(deserialize_int(&[0, 0, 0, 0, 0, 0, 1, 0, 9]), 256);
        assert_eq!(serialize_float(1.5), 1.5f64.to_be_bytes());
        assert_eq!(deserialize_float(&serialize_float(-2.25)), -2.25);
        assert_eq!(deserialize_float(&1.5f32.to_be_bytes()), 1.5);
        assert!(deserialize_float(b"abc").is_nan());
    }
}

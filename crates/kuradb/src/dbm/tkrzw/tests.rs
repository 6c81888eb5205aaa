use super::*;

#[test]
fn formats_are_told_by_their_heads() {
    assert_eq!(ReferenceFormat::of_head(b"TkrzwHDB\n\x01", 200), Some(ReferenceFormat::Hash));
    assert_eq!(ReferenceFormat::of_head(b"TkrzwSDB\n\x01", 200), Some(ReferenceFormat::Skip));
    assert_eq!(ReferenceFormat::of_head(b"\xff\x05apple", 200), Some(ReferenceFormat::Flat));
    assert_eq!(ReferenceFormat::of_head(b"\xff\xff\x7f", 200), None);
    assert_eq!(ReferenceFormat::of_head(b"KuraHash", 200), None);
    let mut tree = vec![0u8; 128];
    tree[..9].copy_from_slice(b"TkrzwHDB\n");
    tree[62..65].copy_from_slice(b"TDB");
    assert_eq!(ReferenceFormat::of_head(&tree, 4096), Some(ReferenceFormat::Tree));
}

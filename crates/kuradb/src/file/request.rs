//! One read of a batch handed to [`File::read_many`](super::File::read_many).

use crate::error::{Error, ErrorKind, Result};

/// A read of `buf.len()` bytes at `offset`, one of a batch.
///
/// A database that knows the `(offset, len)` pairs it needs carves one
/// buffer into requests with [`ReadRequest::carve`]: one allocation for the
/// whole batch.
///
/// ```
/// use kuradb::file::{File, FileSpec, OpenOptions, ReadRequest};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let file = FileSpec::parse("pos-para,block_size=4096")?.open(dir.path().join("f"), &OpenOptions::writer())?;
/// file.append(b"hello, world")?;
/// let mut arena = vec![0u8; 10];
/// let mut reads = ReadRequest::carve(&mut arena, [(7, 5), (0, 5)])?;
/// file.read_many(&mut reads)?;
/// assert_eq!(&arena, b"worldhello");
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct ReadRequest<'a> {
    /// Where the read starts in the file.
    pub offset: u64,
    /// Where the bytes go; its length is the read's length.
    pub buf: &'a mut [u8],
}

impl<'a> ReadRequest<'a> {
    /// A read filling `buf` from `offset`.
    pub fn new(offset: u64, buf: &'a mut [u8]) -> ReadRequest<'a> {
        ReadRequest { offset, buf }
    }

    /// Splits `arena` into consecutive buffers, one per `(offset, len)` of
    /// `spans` in order. Fails with [`ErrorKind::InvalidArgument`] if the
    /// lengths add up to more than the arena holds; bytes left over stay out
    /// of every request.
    pub fn carve(
        arena: &'a mut [u8],
        spans: impl IntoIterator<Item = (u64, usize)>,
    ) -> Result<Vec<ReadRequest<'a>>> {
        let spans = spans.into_iter();
        let mut reads = Vec::with_capacity(spans.size_hint().0);
        let mut rest = arena;
        for (offset, len) in spans {
            if len > rest.len() {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "read of {len} bytes at offset {offset} does not fit the arena's remaining {} bytes",
                        rest.len()
                    ),
                ));
            }
            let (buf, tail) = rest.split_at_mut(len);
            reads.push(ReadRequest { offset, buf });
            rest = tail;
        }
        Ok(reads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carving_past_the_arena_is_refused() {
        let mut arena = [0u8; 8];
        let err = ReadRequest::carve(&mut arena, [(0, 4), (100, 5)]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("5 bytes at offset 100"), "{err}");
        let reads = ReadRequest::carve(&mut arena, [(0, 4), (100, 4)]).unwrap();
        assert_eq!(reads.iter().map(|r| (r.offset, r.buf.len())).collect::<Vec<_>>(), [(0, 4), (100, 4)]);
    }
}

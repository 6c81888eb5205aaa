//! Expiry (time to live) as the bindings take and show it: times to live
//! and expiry times in seconds (a float, as Python's `time.time()` and
//! Ruby's `Time#to_f` give them) or milliseconds (as Java's `Duration` and
//! `Instant` give them), checked and turned into what
//! [`kuradb::dbm::expiry::Expiry`] takes, and back.
//!
//! The background sweeper a binding starts lives in its database's
//! [`OpenHandle`](crate::handle::OpenHandle), which stops it before a
//! close.

use std::time::Duration;

use kuradb::dbm::expiry::{Expiry, SweepReport};
use kuradb::{Error, ErrorKind};

use crate::handle::Db;

fn invalid(what: &str, value: impl std::fmt::Display, why: &str) -> Error {
    Error::new(ErrorKind::InvalidArgument, format!("{what} {value} {why}"))
}

/// The largest number of milliseconds a time to live or an expiry time
/// may have: what the database stores (milliseconds since the Unix epoch
/// in 8 bytes) with room for the time now added.
const MAX_MS: u64 = 1 << 62;

/// Milliseconds of `seconds` (`what` names it in an error): a finite number
/// of seconds, zero or more, that fits.
fn millis_of_seconds(seconds: f64, what: &str) -> kuradb::Result<u64> {
    if seconds.is_nan() {
        return Err(invalid(what, seconds, "is not a number of seconds"));
    }
    if seconds < 0.0 {
        return Err(invalid(what, seconds, "is negative"));
    }
    let ms = (seconds * 1000.0).ceil();
    if !ms.is_finite() || ms > MAX_MS as f64 {
        return Err(invalid(what, seconds, "is too large"));
    }
    Ok(ms as u64)
}

/// A time to live given in seconds: zero or more, finite, and small enough
/// to add to the time now. Fractions of a millisecond round up, so a
/// positive time to live never expires the record at once.
pub fn ttl_of_seconds(seconds: f64) -> kuradb::Result<Duration> {
    millis_of_seconds(seconds, "the time to live (seconds)").map(Duration::from_millis)
}

/// A time to live given in milliseconds (as a Java `Duration` gives it):
/// zero or more, and small enough to add to the time now.
pub fn ttl_of_millis(millis: i64) -> kuradb::Result<Duration> {
    if millis < 0 {
        return Err(invalid("the time to live (milliseconds)", millis, "is negative"));
    }
    if millis as u64 > MAX_MS {
        return Err(invalid("the time to live (milliseconds)", millis, "is too large"));
    }
    Ok(Duration::from_millis(millis as u64))
}

/// An expiry time given in seconds since the Unix epoch, as milliseconds
/// since the epoch.
pub fn expiry_of_unix_seconds(seconds: f64) -> kuradb::Result<u64> {
    millis_of_seconds(seconds, "the expiry time (seconds since the Unix epoch)")
}

/// An expiry time given in milliseconds since the Unix epoch (as a Java
/// `Instant` gives it).
pub fn expiry_of_unix_millis(millis: i64) -> kuradb::Result<u64> {
    if millis < 0 {
        return Err(invalid("the expiry time (milliseconds since the Unix epoch)", millis, "is before 1970"));
    }
    if millis as u64 > MAX_MS {
        return Err(invalid("the expiry time (milliseconds since the Unix epoch)", millis, "is too large"));
    }
    Ok(millis as u64)
}

/// A duration in seconds, as a float.
pub fn seconds_of(duration: Duration) -> f64 {
    duration.as_secs_f64()
}

/// An expiry time in seconds since the Unix epoch, as a float.
pub fn unix_seconds_of(expiry_ms: u64) -> f64 {
    expiry_ms as f64 / 1000.0
}

/// Stores `key` with `value`, expiring `ttl` from now: replacing a record
/// of the key, or with `overwrite` false only if there is none (else it
/// fails with [`ErrorKind::Duplication`], as a plain insert does).
pub fn store_with_ttl(
    db: &Db,
    key: &[u8],
    value: &[u8],
    ttl: Duration,
    overwrite: bool,
) -> kuradb::Result<()> {
    if overwrite {
        db.set_with_ttl(key, value, ttl)
    } else {
        db.insert_with_ttl(key, value, ttl)
    }
}

/// Runs one bounded sweep: see [`Expiry::sweep`].
pub fn sweep(db: &Db, max_records: i64) -> kuradb::Result<SweepReport> {
    if max_records <= 0 {
        return Err(invalid("max_records", max_records, "is not above 0"));
    }
    db.sweep(usize::try_from(max_records).unwrap_or(usize::MAX))
}

/// A sweeper's budget as the `usize` the library takes, refusing zero and
/// negative numbers.
pub fn records_per_second(value: i64) -> kuradb::Result<usize> {
    if value <= 0 {
        return Err(invalid("records_per_second", value, "is not above 0"));
    }
    Ok(usize::try_from(value).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuradb::dbm::poly::PolyDbm;
    use kuradb::dbm::{Access, Dbm};

    fn memory(params: &str) -> Db {
        let poly = PolyDbm::open("", Access::ReadWrite, &kuradb::Params::parse(params).unwrap()).unwrap();
        crate::handle::transactional(poly, Access::ReadWrite).unwrap()
    }

    #[test]
    fn seconds_are_checked_and_named_in_errors() {
        assert_eq!(ttl_of_seconds(1.5).unwrap(), Duration::from_millis(1500));
        assert_eq!(ttl_of_seconds(0.0).unwrap(), Duration::ZERO);
        assert_eq!(ttl_of_seconds(0.0001).unwrap(), Duration::from_millis(1));
        for (bad, why) in [
            (-1.0, "is negative"),
            (f64::NAN, "is not a number"),
            (f64::INFINITY, "too large"),
            (1e300, "too large"),
        ] {
            let err = ttl_of_seconds(bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument);
            assert!(err.message().contains("time to live") && err.message().contains(why), "{err}");
        }
        assert!(expiry_of_unix_seconds(-5.0).unwrap_err().message().contains("-5"));
        assert_eq!(expiry_of_unix_seconds(1.25).unwrap(), 1250);
        assert_eq!(ttl_of_millis(-3).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(ttl_of_millis(7).unwrap(), Duration::from_millis(7));
        assert!(expiry_of_unix_millis(-1).unwrap_err().message().contains("before 1970"));
        assert_eq!(expiry_of_unix_millis(i64::MAX).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(unix_seconds_of(1500), 1.5);
        assert_eq!(seconds_of(Duration::from_millis(250)), 0.25);
        assert_eq!(records_per_second(0).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(records_per_second(5).unwrap(), 5);
    }

    #[test]
    fn sets_and_inserts_with_a_ttl() {
        let db = memory("dbm=stdtree,expiry=true");
        store_with_ttl(&db, b"a", b"1", Duration::from_secs(60), true).unwrap();
        assert!(db.ttl(b"a").unwrap().unwrap().unwrap() > Duration::from_secs(59));
        kuradb::dbm::Dbm::set(&db, b"a", b"2").unwrap();
        assert_eq!(db.ttl(b"a").unwrap(), Some(None));
        assert_eq!(
            store_with_ttl(&db, b"a", b"3", Duration::from_secs(5), false).unwrap_err().kind(),
            ErrorKind::Duplication
        );
        assert_eq!(db.get(b"a").unwrap().unwrap(), b"2");
        store_with_ttl(&db, b"b", b"4", Duration::from_secs(5), false).unwrap();
        assert_eq!(db.get(b"b").unwrap().unwrap(), b"4");
        assert!(db.ttl(b"b").unwrap().unwrap().is_some());
        store_with_ttl(&db, b"c", b"5", Duration::ZERO, false).unwrap();
        assert_eq!(db.get(b"c").unwrap(), None);
        assert_eq!(sweep(&db, 0).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert!(sweep(&db, 100).unwrap().finished_pass);
    }

    #[test]
    fn a_database_without_expiry_says_so() {
        let db = memory("dbm=stdtree");
        kuradb::dbm::Dbm::set(&db, b"a", b"1").unwrap();
        let err = store_with_ttl(&db, b"a", b"1", Duration::from_secs(1), true).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Infeasible);
        assert!(err.message().contains("expiry=true"), "{err}");
    }
}

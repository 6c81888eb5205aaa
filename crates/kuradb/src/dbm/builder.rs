//! Opening through builders: `HashDbm::builder().num_buckets(n).open(path)`.
//!
//! A class's options type is its builder: its setters set the tuning, and
//! `open(path)` (reading and writing, creating the file if absent) or
//! `open_read_only(path)` end the chain, so a call reads as what it does and
//! no setter is written twice. Whatever a path and parameters name
//! ([`super::poly::PolyDbm`], [`super::shard::ShardDbm`]) is built from
//! parameters by a [`ParamsBuilder`]. The `open(path, access, &options)`
//! functions stay for a caller that holds the access as a value.

use std::fmt::Display;
use std::marker::PhantomData;

use super::params::Params;
use crate::error::{Error, ErrorKind, Result};

/// Gives a class with its own options type `builder()`, and the options
/// `open` and `open_read_only`, all through the class's `open`.
macro_rules! options_builder {
    ($dbm:ident, $options:ident) => {
        impl $dbm {
            #[doc = concat!("Options to open a database with, set one by one and ended by [`", stringify!($options), "::open`] or [`", stringify!($options), "::open_read_only`].")]
            pub fn builder() -> $options {
                $options::default()
            }
        }

        impl $options {
            #[doc = concat!("Opens the database at `path` with these options for reading and writing, creating it if absent: [`", stringify!($dbm), "::open`] with [`Access::ReadWrite`](crate::dbm::Access::ReadWrite).")]
            pub fn open(&self, path: impl AsRef<std::path::Path>) -> $crate::Result<$dbm> {
                $dbm::open(path, $crate::dbm::Access::ReadWrite, self)
            }

            #[doc = concat!("Opens the database at `path` with these options for reading only: [`", stringify!($dbm), "::open`] with [`Access::ReadOnly`](crate::dbm::Access::ReadOnly).")]
            pub fn open_read_only(&self, path: impl AsRef<std::path::Path>) -> $crate::Result<$dbm> {
                $dbm::open(path, $crate::dbm::Access::ReadOnly, self)
            }
        }
    };
}
pub(crate) use options_builder;

/// Parameters gathered one by one for a database that opens from
/// [`Params`], ended by `open(path)` or `open_read_only(path)`:
/// `PolyDbm::builder().param("num_buckets", 1000).open(path)`.
#[derive(Clone, Debug)]
pub struct ParamsBuilder<D> {
    params: Params,
    // A parameter given twice is reported by the open that ends the chain,
    // so the chain itself stays free of `?`.
    error: Option<(ErrorKind, String)>,
    target: PhantomData<fn() -> D>,
}

impl<D> Default for ParamsBuilder<D> {
    fn default() -> ParamsBuilder<D> {
        ParamsBuilder { params: Params::new(), error: None, target: PhantomData }
    }
}

impl<D> ParamsBuilder<D> {
    /// Adds the parameter `name` with `value`'s text; a name given twice
    /// makes the open fail.
    pub fn param(mut self, name: &str, value: impl Display) -> ParamsBuilder<D> {
        if let Err(e) = self.params.insert(name, &value.to_string()) {
            self.error.get_or_insert((e.kind(), e.message().to_string()));
        }
        self
    }

    /// Adds every parameter of `params`, as [`ParamsBuilder::param`] does.
    pub fn params(mut self, params: &Params) -> ParamsBuilder<D> {
        for (name, value) in params.iter() {
            self = self.param(name, value);
        }
        self
    }

    /// The parameters gathered, or the first error in gathering them.
    pub(crate) fn params_for_open(&self) -> Result<&Params> {
        match &self.error {
            Some((kind, message)) => Err(Error::new(*kind, message.clone())),
            None => Ok(&self.params),
        }
    }
}

/// Gives a class that opens from parameters `builder()`, and its
/// [`ParamsBuilder`] `open` and `open_read_only`.
macro_rules! params_builder {
    ($dbm:ident) => {
        impl $dbm {
            /// Parameters to open a database with, added one by one and
            /// ended by `open(path)` or `open_read_only(path)`.
            pub fn builder() -> $crate::dbm::builder::ParamsBuilder<$dbm> {
                $crate::dbm::builder::ParamsBuilder::default()
            }
        }

        impl $crate::dbm::builder::ParamsBuilder<$dbm> {
            #[doc = concat!("Opens the database at `path` with these parameters for reading and writing: [`", stringify!($dbm), "::open`] with [`Access::ReadWrite`](crate::dbm::Access::ReadWrite).")]
            pub fn open(&self, path: impl AsRef<std::path::Path>) -> $crate::Result<$dbm> {
                $dbm::open(path, $crate::dbm::Access::ReadWrite, self.params_for_open()?)
            }

            #[doc = concat!("Opens the database at `path` with these parameters for reading only: [`", stringify!($dbm), "::open`] with [`Access::ReadOnly`](crate::dbm::Access::ReadOnly).")]
            pub fn open_read_only(&self, path: impl AsRef<std::path::Path>) -> $crate::Result<$dbm> {
                $dbm::open(path, $crate::dbm::Access::ReadOnly, self.params_for_open()?)
            }
        }
    };
}
pub(crate) use params_builder;

//! Named parameters: how a program, the CLI, the Python binding and a
//! parameter string say which database, file and tuning they want.
//!
//! [`Params`] is the map; each database class reads its own parameters from it
//! with a `Taker` (next to its Options), and whatever no reader took is
//! refused by name.

use std::collections::BTreeMap;

use super::persistence::FlatLock;
use crate::error::{Error, ErrorKind, Result};
use crate::file::{FileSpec, LockWait, OpenOptions};

/// Named parameters, as a map or parsed from `name=value,name=value`.
///
/// Names are compared in lower case. A word without `=` continues the value
/// before it, so `access=direct,padding` works as it does for [`FileSpec`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params {
    entries: BTreeMap<String, String>,
}

impl Params {
    /// No parameters: every default.
    pub fn new() -> Params {
        Params::default()
    }

    /// Parses `name=value` pairs separated by commas; an empty text is no
    /// parameters. A name given twice is an error.
    pub fn parse(text: &str) -> Result<Params> {
        let mut params = Params::new();
        let mut last: Option<String> = None;
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word.split_once('=') {
                Some((name, value)) => {
                    let name = name.trim().to_ascii_lowercase();
                    params.insert(&name, value.trim())?;
                    last = Some(name);
                }
                None => match &last {
                    Some(name) => {
                        let value = params.entries.get_mut(name).expect("the last name");
                        value.push(',');
                        value.push_str(word);
                    }
                    None => {
                        return Err(Error::new(
                            ErrorKind::InvalidArgument,
                            format!("parameter {word:?} has no value: write it as name=value"),
                        ))
                    }
                },
            }
        }
        Ok(params)
    }

    /// Adds one parameter; a name given twice is an error.
    pub fn insert(&mut self, name: &str, value: &str) -> Result<()> {
        let name = name.trim().to_ascii_lowercase();
        if self.entries.insert(name.clone(), value.to_string()).is_some() {
            return Err(Error::new(ErrorKind::InvalidArgument, format!("parameter {name} is given twice")));
        }
        Ok(())
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries.get(&name.to_ascii_lowercase()).map(String::as_str)
    }

    /// The true-or-false value of `name`, if given.
    pub(crate) fn flag(&self, name: &str) -> Result<Option<bool>> {
        self.get(name).map(|value| parse_flag(name, value)).transpose()
    }

    /// Every parameter, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The parameters without `name`.
    pub fn without(&self, name: &str) -> Params {
        let mut out = self.clone();
        out.entries.remove(&name.to_ascii_lowercase());
        out
    }
}

impl std::fmt::Display for Params {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words: Vec<String> = self.entries.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&words.join(","))
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for Params {
    /// Collects pairs; of a name given twice, the last value counts.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Params {
        let entries = iter
            .into_iter()
            .map(|(k, v)| (k.as_ref().trim().to_ascii_lowercase(), v.as_ref().to_string()))
            .collect();
        Params { entries }
    }
}

/// Takes parameters one by one, so that whatever is left at the end can be
/// refused by name. In probe mode ([`Taker::probe`]) it takes nothing and
/// notes every name asked for: what a class accepts, without a second list.
pub(crate) struct Taker<'a> {
    params: &'a Params,
    taken: Vec<&'a str>,
    /// "a hash database": what the refusal says the parameters were for.
    what: &'a str,
    /// In probe mode, every name asked for, and whether the file's were.
    asked: Option<(Vec<&'static str>, bool)>,
}

static NO_PARAMS: Params = Params { entries: BTreeMap::new() };

impl<'a> Taker<'a> {
    /// A taker of `params` for `what` ("a hash database").
    pub(crate) fn new(params: &'a Params, what: &'a str) -> Taker<'a> {
        Taker { params, taken: Vec::new(), what, asked: None }
    }

    /// A taker that takes nothing and notes the names asked for.
    pub(crate) fn probe() -> Taker<'static> {
        Taker { params: &NO_PARAMS, taken: Vec::new(), what: "", asked: Some((Vec::new(), false)) }
    }

    /// In probe mode, whether `name` was asked for (or is a file parameter
    /// and the file's were).
    pub(crate) fn was_asked(&self, name: &str) -> bool {
        let Some((asked, files)) = &self.asked else { return false };
        let name = name.trim().to_ascii_lowercase();
        // A file parameter is one FileSpec claims; an error of its value
        // still means the name is known.
        asked.contains(&name.as_str()) || (*files && FileSpec::default().set(&name, "").unwrap_or(true))
    }

    /// The first of `names` given, marked as taken.
    pub(crate) fn take(&mut self, names: &[&'static str]) -> Option<(&'a str, &'a str)> {
        if let Some((asked, _)) = &mut self.asked {
            asked.extend_from_slice(names);
            return None;
        }
        for (name, value) in &self.params.entries {
            if names.contains(&name.as_str()) {
                self.taken.push(name.as_str());
                return Some((name.as_str(), value.as_str()));
            }
        }
        None
    }

    /// A number, if given.
    pub(crate) fn number<T: std::str::FromStr>(&mut self, names: &[&'static str]) -> Result<Option<T>> {
        match self.take(names) {
            None => Ok(None),
            Some((name, value)) => value.trim().parse::<T>().map(Some).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("parameter {name} must be a number, not {value:?}"),
                )
            }),
        }
    }

    /// A true-or-false value, if given.
    pub(crate) fn flag(&mut self, names: &[&'static str]) -> Result<Option<bool>> {
        match self.take(names) {
            None => Ok(None),
            Some((name, value)) => parse_flag(name, value).map(Some),
        }
    }

    /// The file implementation and its options (every parameter FileSpec
    /// knows) and how to open it (`wait`, `no_wait`, `lock_timeout`,
    /// `no_lock`, `truncate`).
    pub(crate) fn file_and_open(&mut self) -> Result<(FileSpec, OpenOptions)> {
        let mut spec = FileSpec::default();
        if let Some((_, files)) = &mut self.asked {
            *files = true;
        }
        for (name, value) in &self.params.entries {
            if name != "dbm" && spec.set(name, value)? {
                self.taken.push(name.as_str());
            }
        }
        spec.validate()?;
        let mut open = OpenOptions::writer();
        open.lock_wait = self.lock_wait()?;
        open.no_lock = self.flag(&["no_lock"])?.unwrap_or(false);
        open.truncate = self.flag(&["truncate"])?.unwrap_or(false);
        Ok((spec, open))
    }

    /// The opening parameters of an on-memory database: `truncate`, and
    /// how its writer locks the flat file (`wait`, `no_wait`, `lock_timeout`,
    /// `no_lock`).
    pub(crate) fn memory_open(&mut self) -> Result<(bool, FlatLock)> {
        let lock =
            FlatLock::default().wait(self.lock_wait()?).no_lock(self.flag(&["no_lock"])?.unwrap_or(false));
        Ok((self.flag(&["truncate"])?.unwrap_or(false), lock))
    }

    /// What an open does while another process holds the file's lock:
    /// `lock_timeout=SECONDS` waits at most that long; `wait=true` (or
    /// `no_wait=false`, the reference's spelling) as long as it takes; and
    /// otherwise, or with `no_wait=true`, it fails at once.
    fn lock_wait(&mut self) -> Result<LockWait> {
        let no_wait = self.flag(&["no_wait"])?;
        let wait = self.flag(&["wait"])?;
        let timeout = self.number::<f64>(&["lock_timeout"])?;
        LockWait::from_choices(no_wait, wait, timeout)
    }

    /// Refuses every parameter not taken, naming them.
    pub(crate) fn finish(self) -> Result<()> {
        let left: Vec<&str> =
            self.params.entries.keys().map(String::as_str).filter(|k| !self.taken.contains(k)).collect();
        if left.is_empty() {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "unknown parameter{} {} for {}",
                if left.len() > 1 { "s" } else { "" },
                left.join(", "),
                self.what
            ),
        ))
    }
}

/// A true-or-false parameter's value.
pub(crate) fn parse_flag(name: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" | "" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("parameter {name} must be true or false, not {value:?}"),
        )),
    }
}

/// The error of a parameter whose value is none of those `expected`.
pub(crate) fn bad_value(name: &str, value: &str, expected: &str) -> Error {
    Error::new(ErrorKind::InvalidArgument, format!("parameter {name} must be {expected}, not {value:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_parse_and_refuse_what_they_cannot_read() {
        let p = Params::parse("dbm=tree, FILE=pos-para,access=direct,padding ,block_size=512").unwrap();
        assert_eq!(p.get("file"), Some("pos-para"));
        assert_eq!(p.get("access"), Some("direct,padding"));
        assert_eq!(p.to_string(), "access=direct,padding,block_size=512,dbm=tree,file=pos-para");
        assert!(Params::parse("").unwrap().iter().next().is_none());
        assert!(Params::parse("padding").unwrap_err().message().contains("has no value"));
        assert!(Params::parse("a=1,a=2").unwrap_err().message().contains("given twice"));
        let p: Params = [("Num_Buckets", "7")].into_iter().collect();
        assert_eq!(p.get("num_buckets"), Some("7"));
    }

    #[test]
    fn a_probe_knows_the_names_asked_for_and_the_files() {
        let mut probe = Taker::probe();
        probe.number::<u64>(&["num_buckets", "buckets"]).unwrap();
        assert!(probe.was_asked("buckets") && !probe.was_asked("block_size"));
        probe.file_and_open().unwrap();
        assert!(probe.was_asked("block_size") && probe.was_asked("lock_timeout") && probe.was_asked("FILE"));
        assert!(!probe.was_asked("step_unit"));
    }
}

//! A test-only class: the simplest correct database, one lock over an
//! ordered map, with no file. It checks the provided methods of [`Dbm`]
//! (see the `tests` module beside it), and, registered in the class
//! registry as [`DbmClass::Model`](super::class::DbmClass::Model), shows
//! that a class is its module plus one registry entry.

use std::collections::BTreeMap;
use std::path::Path;

use parking_lot::Mutex;

use super::class::{ClassOptions, DbmClass};
use super::params::Taker;
use super::*;

/// The simplest correct database: one lock over an ordered map.
#[derive(Default)]
pub(crate) struct Model {
    pub(crate) map: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
}

fn apply(map: &mut BTreeMap<Vec<u8>, Vec<u8>>, key: &[u8], action: Action<'_>) {
    match action {
        Action::Keep => {}
        Action::Remove => {
            map.remove(key);
        }
        Action::Set(v) => {
            map.insert(key.to_vec(), v.into_owned());
        }
    }
}

impl Dbm for Model {
    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }

    fn process<'a>(&self, key: &[u8], _access: Access, f: &mut Processor<'a>) -> Result<()> {
        let mut map = self.map.lock();
        let action = f(map.get(key).map(Vec::as_slice));
        apply(&mut map, key, action);
        Ok(())
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], _access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        let mut map = self.map.lock();
        for (i, key) in keys.iter().enumerate() {
            let action = f(i, key, map.get(*key).map(Vec::as_slice));
            apply(&mut map, key, action);
        }
        Ok(())
    }

    fn process_each<'a>(&self, _access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
        let mut map = self.map.lock();
        let keys: Vec<Vec<u8>> = map.keys().cloned().collect();
        for key in keys {
            let value = map[&key].clone();
            let action = f(&key, &value);
            apply(&mut map, &key, action);
        }
        Ok(())
    }

    fn count(&self) -> Result<u64> {
        Ok(self.map.lock().len() as u64)
    }
    fn file_size(&self) -> Result<u64> {
        Ok(0)
    }
    fn path(&self) -> Option<&Path> {
        None
    }
    fn clear(&self) -> Result<()> {
        self.map.lock().clear();
        Ok(())
    }
    fn rebuild(&self) -> Result<()> {
        Ok(())
    }
    fn should_be_rebuilt(&self) -> Result<bool> {
        Ok(false)
    }
    fn synchronize(&self, _durability: Durability) -> Result<()> {
        Ok(())
    }
    fn copy_file_data(&self, _dest: &Path, _durability: Durability) -> Result<()> {
        Err(Error::new(ErrorKind::NotImplemented, "the test model has no file"))
    }
    fn inspect(&self) -> Result<Vec<(String, String)>> {
        Ok(vec![])
    }
    fn is_healthy(&self) -> bool {
        true
    }
    fn is_ordered(&self) -> bool {
        true
    }
    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        Err(Error::new(ErrorKind::NotImplemented, "the test model has no cursor"))
    }
}

/// The model's options: it takes none besides `dbm`.
struct ModelOptions;

impl ClassOptions for ModelOptions {
    fn open(&self, class: DbmClass, path: Option<&Path>, _access: Access) -> Result<Box<dyn Dbm>> {
        match path {
            None => Ok(Box::<Model>::default()),
            Some(path) => Err(Error::new(
                ErrorKind::NotImplemented,
                format!("the {} database keeps no file, so it cannot open {}", class.name(), path.display()),
            )),
        }
    }
}

/// The model's registry entry's reader of options.
pub(crate) fn take_options(_: &mut Taker<'_>) -> Result<Box<dyn ClassOptions>> {
    Ok(Box::new(ModelOptions))
}

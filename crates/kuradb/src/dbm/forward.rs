//! Passing a database's methods on to the database a wrapper holds.

/// Implements the [`Dbm`] methods a wrapper passes on unchanged to the
/// database `$target` names (given `$this`, the wrapper): every method but
/// `close`, `path` and `rebuild_with_params`, which a wrapper answers itself.
/// The provided methods are passed on too, as a database may do them its
/// own way (a skip database adds records on set rather than replacing them).
macro_rules! forward_dbm {
    (|$this:ident| $target:expr) => {
        fn process<'a>(
            &self,
            key: &[u8],
            access: $crate::dbm::Access,
            f: &mut $crate::dbm::Processor<'a>,
        ) -> $crate::Result<()> {
            let $this = self;
            $target.process(key, access, f)
        }
        fn process_multi<'a>(
            &self,
            keys: &[&[u8]],
            access: $crate::dbm::Access,
            f: &mut $crate::dbm::MultiProcessor<'a>,
        ) -> $crate::Result<()> {
            let $this = self;
            $target.process_multi(keys, access, f)
        }
        fn process_each<'a>(
            &self,
            access: $crate::dbm::Access,
            f: &mut $crate::dbm::EachProcessor<'a>,
        ) -> $crate::Result<()> {
            let $this = self;
            $target.process_each(access, f)
        }
        fn count(&self) -> $crate::Result<u64> {
            let $this = self;
            $target.count()
        }
        fn file_size(&self) -> $crate::Result<u64> {
            let $this = self;
            $target.file_size()
        }
        fn clear(&self) -> $crate::Result<()> {
            let $this = self;
            $target.clear()
        }
        fn rebuild(&self) -> $crate::Result<()> {
            let $this = self;
            $target.rebuild()
        }
        fn should_be_rebuilt(&self) -> $crate::Result<bool> {
            let $this = self;
            $target.should_be_rebuilt()
        }
        fn synchronize(&self, durability: $crate::dbm::Durability) -> $crate::Result<()> {
            let $this = self;
            $target.synchronize(durability)
        }
        fn copy_file_data(
            &self,
            dest: &std::path::Path,
            durability: $crate::dbm::Durability,
        ) -> $crate::Result<()> {
            let $this = self;
            $target.copy_file_data(dest, durability)
        }
        fn inspect(&self) -> $crate::Result<Vec<(String, String)>> {
            let $this = self;
            $target.inspect()
        }
        fn is_healthy(&self) -> bool {
            let $this = self;
            $target.is_healthy()
        }
        fn is_ordered(&self) -> bool {
            let $this = self;
            $target.is_ordered()
        }
        fn restores_to_last_sync(&self) -> bool {
            let $this = self;
            $target.restores_to_last_sync()
        }
        fn updates_show_at_sync(&self) -> bool {
            let $this = self;
            $target.updates_show_at_sync()
        }
        fn iter(&self) -> $crate::Result<Box<dyn $crate::dbm::Cursor + '_>> {
            let $this = self;
            $target.iter()
        }
        fn contains(&self, key: &[u8]) -> $crate::Result<bool> {
            let $this = self;
            $target.contains(key)
        }
        fn get(&self, key: &[u8]) -> $crate::Result<Option<Vec<u8>>> {
            let $this = self;
            $target.get(key)
        }
        fn process_presence<'a>(
            &self,
            key: &[u8],
            f: &mut dyn FnMut(bool) -> $crate::dbm::Action<'a>,
        ) -> $crate::Result<()> {
            let $this = self;
            $target.process_presence(key, f)
        }
        fn set(&self, key: &[u8], value: &[u8]) -> $crate::Result<()> {
            let $this = self;
            $target.set(key, value)
        }
        fn insert(&self, key: &[u8], value: &[u8]) -> $crate::Result<()> {
            let $this = self;
            $target.insert(key, value)
        }
        fn remove(&self, key: &[u8]) -> $crate::Result<bool> {
            let $this = self;
            $target.remove(key)
        }
        fn append(&self, key: &[u8], value: &[u8], delimiter: &[u8]) -> $crate::Result<()> {
            let $this = self;
            $target.append(key, value, delimiter)
        }
        fn compare_exchange(
            &self,
            key: &[u8],
            expected: Option<&[u8]>,
            desired: Option<&[u8]>,
        ) -> $crate::Result<bool> {
            let $this = self;
            $target.compare_exchange(key, expected, desired)
        }
        fn increment(&self, key: &[u8], delta: i64, initial: i64) -> $crate::Result<i64> {
            let $this = self;
            $target.increment(key, delta, initial)
        }
        fn get_multi(&self, keys: &[&[u8]]) -> $crate::Result<Vec<Option<Vec<u8>>>> {
            let $this = self;
            $target.get_multi(keys)
        }
        fn contains_multi(&self, keys: &[&[u8]]) -> $crate::Result<Vec<bool>> {
            let $this = self;
            $target.contains_multi(keys)
        }
        fn prefetch(&self, keys: &[&[u8]]) {
            let $this = self;
            $target.prefetch(keys)
        }
        fn set_multi(&self, pairs: &[(&[u8], &[u8])]) -> $crate::Result<()> {
            let $this = self;
            $target.set_multi(pairs)
        }
        fn insert_multi(&self, pairs: &[(&[u8], &[u8])]) -> $crate::Result<()> {
            let $this = self;
            $target.insert_multi(pairs)
        }
        fn remove_multi(&self, keys: &[&[u8]]) -> $crate::Result<usize> {
            let $this = self;
            $target.remove_multi(keys)
        }
        fn apply_changes(
            &self,
            changes: &[$crate::dbm::FinalChange<'_>],
            part: $crate::dbm::UnitPart,
            seen: &mut dyn FnMut(usize, Option<&[u8]>),
        ) -> $crate::Result<()> {
            let $this = self;
            $target.apply_changes(changes, part, seen)
        }
        fn compare_exchange_multi(
            &self,
            expected: &[(&[u8], Option<&[u8]>)],
            desired: &[(&[u8], Option<&[u8]>)],
        ) -> $crate::Result<bool> {
            let $this = self;
            $target.compare_exchange_multi(expected, desired)
        }
        fn rekey(
            &self,
            old_key: &[u8],
            new_key: &[u8],
            rekey: $crate::dbm::Rekey,
            on_duplicate: $crate::dbm::OnDuplicate,
        ) -> $crate::Result<()> {
            let $this = self;
            $target.rekey(old_key, new_key, rekey, on_duplicate)
        }
        fn set_and_get(&self, key: &[u8], value: &[u8]) -> $crate::Result<Option<Vec<u8>>> {
            let $this = self;
            $target.set_and_get(key, value)
        }
        fn insert_and_get(&self, key: &[u8], value: &[u8]) -> $crate::Result<Option<Vec<u8>>> {
            let $this = self;
            $target.insert_and_get(key, value)
        }
        fn remove_and_get(&self, key: &[u8]) -> $crate::Result<Option<Vec<u8>>> {
            let $this = self;
            $target.remove_and_get(key)
        }
        fn compare_exchange_and_get(
            &self,
            key: &[u8],
            expected: $crate::dbm::Expected<'_>,
            desired: $crate::dbm::Desired<'_>,
        ) -> $crate::Result<(bool, Option<Vec<u8>>)> {
            let $this = self;
            $target.compare_exchange_and_get(key, expected, desired)
        }
        fn process_first<'a>(
            &self,
            access: $crate::dbm::Access,
            f: &mut $crate::dbm::EachProcessor<'a>,
        ) -> $crate::Result<bool> {
            let $this = self;
            $target.process_first(access, f)
        }
        // The queue's two ends go to the inner database together, so a pop
        // waiting on it is woken by a push through any wrapper.
        fn pop_first(
            &self,
            retry_wait: Option<std::time::Duration>,
        ) -> $crate::Result<Option<(Vec<u8>, Vec<u8>)>> {
            let $this = self;
            $target.pop_first(retry_wait)
        }
        fn push_last(&self, value: &[u8], wtime: Option<f64>) -> $crate::Result<Vec<u8>> {
            let $this = self;
            $target.push_last(value, wtime)
        }
        fn search(
            &self,
            mode: $crate::dbm::SearchMode,
            pattern: &[u8],
            capacity: usize,
        ) -> $crate::Result<Vec<Vec<u8>>> {
            let $this = self;
            $target.search(mode, pattern, capacity)
        }
        fn export(&self, dest: &dyn $crate::dbm::Dbm) -> $crate::Result<()> {
            let $this = self;
            $target.export(dest)
        }
    };
}
pub(crate) use forward_dbm;

/// The moves and the read of a cursor that wraps another in its field
/// `$field` and differs from it only in how it writes: `set` and `remove`
/// are written by the wrapper itself.
macro_rules! forward_cursor_moves {
    ($field:ident) => {
        fn first(&mut self) -> $crate::Result<()> {
            self.$field.first()
        }
        fn jump(&mut self, key: &[u8]) -> $crate::Result<()> {
            self.$field.jump(key)
        }
        fn next(&mut self) -> $crate::Result<()> {
            self.$field.next()
        }
        fn get(&mut self) -> $crate::Result<Option<(Vec<u8>, Vec<u8>)>> {
            self.$field.get()
        }
        fn read(&mut self, f: &mut dyn FnMut(&[u8], &[u8])) -> $crate::Result<bool> {
            self.$field.read(f)
        }
        fn last(&mut self) -> $crate::Result<()> {
            self.$field.last()
        }
        fn jump_lower(&mut self, key: &[u8], edge: $crate::dbm::Edge) -> $crate::Result<()> {
            self.$field.jump_lower(key, edge)
        }
        fn jump_upper(&mut self, key: &[u8], edge: $crate::dbm::Edge) -> $crate::Result<()> {
            self.$field.jump_upper(key, edge)
        }
        fn previous(&mut self) -> $crate::Result<()> {
            self.$field.previous()
        }
    };
}
pub(crate) use forward_cursor_moves;

//! The on-memory databases under threads: writers on keys of their own and on
//! shared keys (so that shards resize and leaves split and merge while other
//! shards and leaves change), checked afterwards against each thread's own
//! model; and, for the ordered ones, readers walking cursors meanwhile, which
//! must see keys strictly in order.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use kuradb::dbm::baby::{BabyDbm, BabyOptions};
use kuradb::dbm::cache::{CacheDbm, CacheOptions};
use kuradb::dbm::std_map::{StdHashDbm, StdOptions, StdTreeDbm};
use kuradb::dbm::tiny::{TinyDbm, TinyOptions};
use kuradb::dbm::{Access, Dbm};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const THREADS: usize = 4;
const STEPS: u32 = 20_000;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn databases() -> Vec<(&'static str, Box<dyn Dbm>)> {
    vec![
        ("stdhash", Box::new(StdHashDbm::new(&StdOptions::default()))),
        ("stdtree", Box::new(StdTreeDbm::new(&StdOptions::default()))),
        ("tiny", Box::new(TinyDbm::new(&TinyOptions::default().num_buckets(1).truncate(false)))),
        ("baby", Box::new(BabyDbm::new(&BabyOptions::default().max_page_size(128).max_branches(4)).unwrap())),
        ("cache", Box::new(CacheDbm::new(&CacheOptions::default().cap_rec_num(1 << 20)).unwrap())),
    ]
}

fn own_key(th: usize, i: u32) -> Vec<u8> {
    format!("t{th}-{i:04}").into_bytes()
}

#[test]
fn writers_on_their_own_keys_leave_exactly_their_last_writes() {
    for (name, db) in databases() {
        let db = &*db;
        let stop = AtomicBool::new(false);
        let models: Vec<Model> = std::thread::scope(|s| {
            let readers: Vec<_> = (0..if db.is_ordered() { 1 } else { 0 })
                .map(|_| {
                    s.spawn(|| {
                        while !stop.load(Ordering::Relaxed) {
                            let mut c = db.iter().unwrap();
                            c.first().unwrap();
                            let mut last: Option<Vec<u8>> = None;
                            while let Some((k, _)) = c.get().unwrap() {
                                assert!(last.as_ref().is_none_or(|l| *l < k), "[{name}] a cursor went back");
                                last = Some(k);
                                c.next().unwrap();
                            }
                        }
                    })
                })
                .collect();
            let writers: Vec<_> = (0..THREADS)
                .map(|th| {
                    s.spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(th as u64 * 77 + 1);
                        let mut own = Model::new();
                        for step in 0..STEPS {
                            let shared = format!("shared-{:02}", rng.gen_range(0..50)).into_bytes();
                            if rng.gen_ratio(1, 4) {
                                db.set(&shared, &step.to_be_bytes()).unwrap();
                                continue;
                            }
                            let k = own_key(th, rng.gen_range(0..500));
                            if rng.gen_ratio(1, 3) {
                                db.remove(&k).unwrap();
                                own.remove(&k);
                            } else {
                                let v = vec![th as u8; rng.gen_range(0..40)];
                                db.set(&k, &v).unwrap();
                                own.insert(k, v);
                            }
                            if step % 500 == 0 {
                                let pair = [k_of(th, 9000), k_of(th, 9001)];
                                db.set_multi(&[(&pair[0], b"a"), (&pair[1], b"b")]).unwrap();
                                own.insert(pair[0].clone(), b"a".to_vec());
                                own.insert(pair[1].clone(), b"b".to_vec());
                            }
                        }
                        own
                    })
                })
                .collect();
            let models = writers.into_iter().map(|h| h.join().unwrap()).collect();
            stop.store(true, Ordering::Relaxed);
            readers.into_iter().for_each(|h| h.join().unwrap());
            models
        });
        let mut shared = 0;
        let mut all = Model::new();
        db.process_each(Access::ReadOnly, &mut |k, v| {
            if k.starts_with(b"shared-") {
                shared += 1;
            } else {
                all.insert(k.to_vec(), v.to_vec());
            }
            kuradb::dbm::Action::Keep
        })
        .unwrap();
        let expected: Model = models.into_iter().flatten().collect();
        assert_eq!(all, expected, "[{name}] the records differ from the threads' own writes");
        assert_eq!(db.count().unwrap(), (expected.len() + shared) as u64, "[{name}] count");
    }
}

fn k_of(th: usize, i: u32) -> Vec<u8> {
    own_key(th, i)
}

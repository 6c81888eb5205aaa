//! A long call on one connection holds up that connection alone: short
//! calls run in place on the reactor threads, long ones on the blocking
//! pool (docs/serve.md, "Performance").

mod serve_support;

use std::time::{Duration, Instant};

use serve_support::{error_text, Server};

/// The longest a PING or a GET of another client may wait while long calls
/// run: far above the bound of an in-place batch (about a millisecond), far
/// below the long calls themselves, with room for a loaded machine.
const STALL_BOUND: Duration = Duration::from_millis(700);

/// How long each long call takes.
const LONG: Duration = Duration::from_secs(2);

#[test]
fn long_calls_do_not_stall_other_clients() {
    let dir = tempfile::tempdir().unwrap();
    let path = format!("{}/stall.tkh#file=mmap-para", dir.path().display());
    let server = Server::start(&[&path]);
    let mut other = server.client();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut other).unwrap();
    // As many long calls as the server has reactor threads (the support
    // starts it with 2): run in place, they would hold up every thread.
    let sleepers: Vec<_> = (0..2)
        .map(|_| {
            let mut con = server.client();
            std::thread::spawn(move || {
                let start = Instant::now();
                let reply: String =
                    redis::cmd("DEBUG").arg("SLEEP").arg(LONG.as_secs_f64()).query(&mut con).unwrap();
                assert_eq!(reply, "OK");
                start.elapsed()
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    let mut worst = Duration::ZERO;
    let mut calls = 0;
    while start.elapsed() < LONG / 2 {
        let t = Instant::now();
        let pong: String = redis::cmd("PING").query(&mut other).unwrap();
        let value: String = redis::cmd("GET").arg("k").query(&mut other).unwrap();
        let _: () = redis::cmd("SET").arg(format!("k{calls}")).arg(calls).query(&mut other).unwrap();
        assert_eq!((pong.as_str(), value.as_str()), ("PONG", "v"));
        worst = worst.max(t.elapsed());
        calls += 1;
    }
    for sleeper in sleepers {
        let took = sleeper.join().unwrap();
        assert!(took >= LONG, "DEBUG SLEEP returned after {took:?}");
    }
    assert!(calls >= 5, "only {calls} rounds of calls while the long calls ran");
    assert!(worst < STALL_BOUND, "a round of PING, GET, SET waited {worst:?} behind the long calls");
}

#[test]
fn debug_sleep_checks_its_arguments() {
    let server = Server::start(&["#dbm=stdhash"]);
    let mut con = server.client();
    let reply: String = redis::cmd("DEBUG").arg("SLEEP").arg("0.01").query(&mut con).unwrap();
    assert_eq!(reply, "OK");
    let bad = redis::cmd("DEBUG").arg("SLEEP").arg("soon").query::<String>(&mut con).unwrap_err();
    assert_eq!(error_text(&bad), "ERR value is not a valid float");
    let bad = redis::cmd("DEBUG").arg("SLEEP").arg("-1").query::<String>(&mut con).unwrap_err();
    assert_eq!(error_text(&bad), "ERR value is not a valid float");
    let bad = redis::cmd("DEBUG").arg("RELOAD").query::<String>(&mut con).unwrap_err();
    assert!(error_text(&bad).starts_with("ERR unknown subcommand 'RELOAD'"), "{}", error_text(&bad));
}

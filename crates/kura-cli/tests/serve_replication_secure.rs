//! Replicas of a secured master: `--masterauth` for a master with
//! `--requirepass`, and `--replica_tls…` for a master serving TLS (with and
//! without client certificates). A wrong password, a missing client
//! certificate, a CA that did not sign the master's certificate or a name
//! the certificate does not carry keep the link down, say why in INFO,
//! and apply nothing.

mod serve_support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use serve_support::{Server, TIMEOUT};

/// A throwaway CA's files, and a server and a client certificate it signed.
struct Pki {
    ca: String,
    server_cert: String,
    server_key: String,
    client_cert: String,
    client_key: String,
    ca_pem: String,
}

/// Writes a CA and its certificates into `dir` (the server's naming `names`).
fn pki(dir: &Path, tag: &str, names: &[&str]) -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // Each CA its own name, so a certificate of one is no certificate of the other's.
    ca_params.distinguished_name.push(DnType::CommonName, format!("test CA {tag}"));
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let leaf = |names: Vec<String>, usage, name: &str| {
        let mut params = CertificateParams::new(names).unwrap();
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
        (
            write(dir, &format!("{tag}-{name}.pem"), &cert.pem()),
            write(dir, &format!("{tag}-{name}.key"), &key.serialize_pem()),
        )
    };
    let names = names.iter().map(|n| n.to_string()).collect();
    let (server_cert, server_key) = leaf(names, ExtendedKeyUsagePurpose::ServerAuth, "server");
    let (client_cert, client_key) =
        leaf(vec!["replica".into()], ExtendedKeyUsagePurpose::ClientAuth, "client");
    Pki {
        ca: write(dir, &format!("{tag}-ca.pem"), &ca.pem()),
        server_cert,
        server_key,
        client_cert,
        client_key,
        ca_pem: ca.pem(),
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn spec(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// A RESP request.
fn resp(words: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend_from_slice(format!("${}\r\n{w}\r\n", w.len()).as_bytes());
    }
    out
}

/// Sends `commands` to a TLS server, as the client of `pki` if `identity`,
/// and waits for an `+OK` to each.
fn ok_over_tls(server: &Server, pki: &Pki, identity: bool, commands: &[&[&str]]) {
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(pki.ca_pem.as_bytes()).unwrap()).unwrap();
    let builder = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = if identity {
        let chain = CertificateDer::pem_file_iter(&pki.client_cert).unwrap().map(Result::unwrap).collect();
        builder.with_client_auth_cert(chain, PrivateKeyDer::from_pem_file(&pki.client_key).unwrap()).unwrap()
    } else {
        builder.with_no_client_auth()
    };
    let tcp = TcpStream::connect(&server.address).unwrap();
    tcp.set_read_timeout(Some(TIMEOUT)).unwrap();
    let conn = ClientConnection::new(Arc::new(config), ServerName::try_from("localhost").unwrap()).unwrap();
    let mut tls = StreamOwned::new(conn, tcp);
    for words in commands {
        tls.write_all(&resp(words)).unwrap();
    }
    tls.flush().unwrap();
    let want = b"+OK\r\n".repeat(commands.len());
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.len() < want.len() {
        let n = tls.read(&mut buf).unwrap();
        assert!(n > 0, "the master closed the connection");
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, want);
}

fn client(address: &str, password: Option<&str>) -> redis::Connection {
    let url = match password {
        Some(p) => format!("redis://:{p}@{address}/"),
        None => format!("redis://{address}/"),
    };
    let con = redis::Client::open(url).unwrap().get_connection_with_timeout(TIMEOUT).unwrap();
    con.set_read_timeout(Some(TIMEOUT)).unwrap();
    con
}

/// Every record of database 0, by KEYS and GET.
fn contents(con: &mut redis::Connection) -> BTreeMap<String, String> {
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(con).unwrap();
    keys.into_iter().map(|k| (k.clone(), redis::cmd("GET").arg(&k).query(con).unwrap())).collect()
}

/// The `field:value` lines of INFO `section`.
fn info(con: &mut redis::Connection, section: &str) -> BTreeMap<String, String> {
    let text: String = redis::cmd("INFO").arg(section).query(con).unwrap();
    text.lines().filter_map(|l| l.split_once(':')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !done() {
        assert!(Instant::now() < deadline, "waited in vain for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn map(records: &[(&str, &str)]) -> BTreeMap<String, String> {
    records.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// Waits until the replica holds `want`, with its link up.
fn wait_following(replica: &Server, want: &BTreeMap<String, String>) {
    let mut con = replica.client();
    wait_for("the replica to hold the master's records", || {
        contents(&mut con) == *want && info(&mut con, "replication")["master_link_status"] == "up"
    });
}

/// Waits until the replica's link has failed with an error containing
/// every one of `reasons`; its `db0_link` line. The replica must hold nothing.
fn wait_refused(replica: &Server, reasons: &[&str]) -> String {
    let mut con = replica.client();
    let mut link = String::new();
    wait_for(&format!("the link to fail with {reasons:?}"), || {
        link = info(&mut con, "replication")["db0_link"].clone();
        link.contains("status=down") && reasons.iter().all(|r| link.contains(r))
    });
    assert_eq!(info(&mut con, "replication")["master_link_status"], "down");
    let size: u64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(size, 0, "a refused link applies nothing: {link}");
    link
}

fn replica_args<'a>(db: &'a str, master: &'a Server, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![db, "--replicaof", &master.address];
    args.extend(extra);
    args
}

#[test]
fn a_replica_with_masterauth_follows_a_master_with_requirepass() {
    let dir = tempfile::tempdir().unwrap();
    let ulog = spec(dir.path(), "ulog");
    let master = Server::start(&[&spec(dir.path(), "m.tkh"), "--ulog", &ulog, "--requirepass", "s3cret"]);
    let mut con = client(&master.address, Some("s3cret"));
    let _: () = redis::cmd("SET").arg("before").arg("1").query(&mut con).unwrap();
    let db = spec(dir.path(), "r.tkh");
    let replica = Server::start(&replica_args(&db, &master, &["--masterauth", "s3cret"]));
    let _: () = redis::cmd("MSET").arg("after").arg("2").arg("more").arg("3").query(&mut con).unwrap();
    wait_following(&replica, &map(&[("before", "1"), ("after", "2"), ("more", "3")]));
}

#[test]
fn a_wrong_or_missing_masterauth_keeps_the_link_down_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let ulog = spec(dir.path(), "ulog");
    let master = Server::start(&[&spec(dir.path(), "m.tkh"), "--ulog", &ulog, "--requirepass", "s3cret"]);
    let mut con = client(&master.address, Some("s3cret"));
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con).unwrap();
    let log = spec(dir.path(), "replica.log");
    let db = spec(dir.path(), "r.tkh");
    let replica =
        Server::start(&replica_args(&db, &master, &["--masterauth", "guess-42", "--log_file", &log]));
    let link = wait_refused(&replica, &["--masterauth", "WRONGPASS"]);
    assert!(!link.contains("guess-42"), "the password is not shown: {link}");
    // Retried with a back-off, not in a busy loop: a few attempts a second.
    let connections = |con: &mut redis::Connection| -> u64 {
        info(con, "stats")["total_connections_received"].parse().unwrap()
    };
    let before = connections(&mut con);
    std::thread::sleep(Duration::from_millis(1500));
    let attempts = connections(&mut con) - before;
    assert!(attempts <= 6, "{attempts} connections in 1.5 s");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("refused --masterauth: WRONGPASS") && !logged.contains("guess-42"), "{logged}");
    drop(replica);
    // Without --masterauth, the replica says what to give.
    let db = spec(dir.path(), "r2.tkh");
    let replica = Server::start(&replica_args(&db, &master, &[]));
    wait_refused(&replica, &["give --masterauth", "NOAUTH"]);
}

#[test]
fn a_replica_follows_a_tls_master_with_and_without_a_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path(), "a", &["localhost", "127.0.0.1"]);
    let records = [("japan", "tokyo"), ("france", "paris")];
    for client_certificates in [false, true] {
        let ulog = spec(dir.path(), &format!("ulog-{client_certificates}"));
        let master_db = spec(dir.path(), &format!("m-{client_certificates}.tkh"));
        let mut args = vec![
            &master_db[..],
            "--ulog",
            &ulog,
            "--tls_cert",
            &pki.server_cert,
            "--tls_key",
            &pki.server_key,
        ];
        if client_certificates {
            args.extend(["--tls_ca", &pki.ca]);
        }
        let master = Server::start(&args);
        ok_over_tls(&master, &pki, client_certificates, &[&["SET", records[0].0, records[0].1]]);
        let mut tls = vec!["--replica_tls", "--replica_tls_ca", &pki.ca];
        if client_certificates {
            tls.extend(["--replica_tls_cert", &pki.client_cert, "--replica_tls_key", &pki.client_key]);
        }
        let db = spec(dir.path(), &format!("r-{client_certificates}.tkh"));
        let replica = Server::start(&replica_args(&db, &master, &tls));
        ok_over_tls(&master, &pki, client_certificates, &[&["SET", records[1].0, records[1].1]]);
        wait_following(&replica, &map(&records));
        if client_certificates {
            // The same replica without its certificate is turned away.
            drop(replica);
            let db = spec(dir.path(), "r-anonymous.tkh");
            let replica = Server::start(&replica_args(&db, &master, &tls[..3]));
            wait_refused(&replica, &["alert"]);
        }
    }
}

#[test]
fn a_replica_refuses_a_master_its_ca_did_not_sign_or_that_is_not_named() {
    let dir = tempfile::tempdir().unwrap();
    let pki_a = pki(dir.path(), "a", &["localhost"]);
    let pki_b = pki(dir.path(), "b", &["localhost"]);
    let ulog = spec(dir.path(), "ulog");
    let master_db = spec(dir.path(), "m.tkh");
    let master = Server::start(&[
        &master_db,
        "--ulog",
        &ulog,
        "--tls_cert",
        &pki_a.server_cert,
        "--tls_key",
        &pki_a.server_key,
        "--requirepass",
        "pw",
    ]);
    let mut args = vec!["--masterauth", "pw", "--replica_tls", "--replica_tls_ca"];
    // Another CA: the handshake fails.
    let db = spec(dir.path(), "r-other-ca.tkh");
    let other: Vec<&str> = args.iter().copied().chain([&pki_b.ca[..]]).collect();
    let replica = Server::start(&replica_args(&db, &master, &other));
    wait_refused(&replica, &["TLS handshake", "invalid peer certificate: UnknownIssuer"]);
    drop(replica);
    // The right CA, but the certificate names localhost, not 127.0.0.1.
    args.push(&pki_a.ca);
    let db = spec(dir.path(), "r-named.tkh");
    let replica = Server::start(&replica_args(&db, &master, &args));
    wait_refused(&replica, &["TLS handshake", "certificate not valid for name \"127.0.0.1\""]);
    drop(replica);
    // Told the name to verify, it follows (with the password over TLS).
    ok_over_tls(&master, &pki_a, false, &[&["AUTH", "pw"], &["SET", "k", "v"]]);
    args.extend(["--replica_tls_name", "localhost"]);
    let replica = Server::start(&replica_args(&db, &master, &args));
    wait_following(&replica, &map(&[("k", "v")]));
}

#[test]
fn bad_replica_tls_flags_are_named_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = write(dir.path(), "bogus.pem", "not a certificate");
    let pki = pki(dir.path(), "a", &["localhost"]);
    let cases: [(&[&str], &str); 4] = [
        (&["--replica_tls"], "--replica_tls_ca"),
        (&["--replica_tls", "--replica_tls_ca", &bogus], "bogus.pem"),
        (&["--replica_tls_ca", &pki.ca], "--replica_tls"),
        (
            &["--replica_tls", "--replica_tls_ca", &pki.ca, "--replica_tls_name", "no such name!"],
            "--replica_tls_name",
        ),
    ];
    for (flags, named) in cases {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_kura"))
            .args(["serve", "#dbm=stdhash", "--address", "127.0.0.1:0"])
            .args(flags)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(named), "{flags:?}: {stderr}");
    }
}

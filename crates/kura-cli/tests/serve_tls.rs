//! `kura serve` over TLS: a throwaway CA signs the server's certificate
//! and a client's; a client that trusts the CA is served, one that does
//! not fails the handshake, and with --tls_ca a client without a
//! certificate is refused.

mod serve_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use serve_support::{Server, TIMEOUT};

struct Pki {
    ca: String,
    server: (String, String),
    client: (String, String),
}

fn pki() -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let leaf = |names: Vec<String>, usage| {
        let mut params = CertificateParams::new(names).unwrap();
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    Pki {
        ca: ca.pem(),
        server: leaf(vec!["localhost".into(), "127.0.0.1".into()], ExtendedKeyUsagePurpose::ServerAuth),
        client: leaf(vec!["client".into()], ExtendedKeyUsagePurpose::ClientAuth),
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn client_config(trusted_ca: &str, identity: Option<&(String, String)>) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(trusted_ca.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes()).map(Result::unwrap).collect();
            builder
                .with_client_auth_cert(chain, PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap())
                .unwrap()
        }
    };
    Arc::new(config)
}

/// Sends PING over TLS; the reply, or the error.
fn ping(server: &Server, config: Arc<ClientConfig>) -> std::io::Result<Vec<u8>> {
    let tcp = TcpStream::connect(&server.address)?;
    tcp.set_read_timeout(Some(TIMEOUT))?;
    let conn = ClientConnection::new(config, ServerName::try_from("localhost").unwrap()).unwrap();
    let mut tls = StreamOwned::new(conn, tcp);
    tls.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")?;
    tls.flush()?;
    let mut reply = Vec::new();
    let mut buf = [0u8; 256];
    while reply.len() < 12 {
        let n = tls.read(&mut buf)?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&buf[..n]);
    }
    Ok(reply)
}

#[test]
fn tls_serves_clients_that_trust_the_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let cert = write(dir.path(), "server.pem", &pki.server.0);
    let key = write(dir.path(), "server.key", &pki.server.1);
    let server = Server::start(&["#dbm=stdhash", "--tls_cert", &cert, "--tls_key", &key]);
    assert_eq!(ping(&server, client_config(&pki.ca, None)).unwrap(), b"+OK\r\n$1\r\nv\r\n");
    // A client trusting another CA refuses the server.
    let other = pki_ca_only();
    assert!(ping(&server, client_config(&other, None)).is_err());
}

fn pki_ca_only() -> String {
    pki().ca
}

#[test]
fn tls_ca_requires_a_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let cert = write(dir.path(), "server.pem", &pki.server.0);
    let key = write(dir.path(), "server.key", &pki.server.1);
    let ca = write(dir.path(), "ca.pem", &pki.ca);
    let server = Server::start(&["#dbm=stdhash", "--tls_cert", &cert, "--tls_key", &key, "--tls_ca", &ca]);
    assert_eq!(ping(&server, client_config(&pki.ca, Some(&pki.client))).unwrap(), b"+OK\r\n$1\r\nv\r\n");
    let refused = ping(&server, client_config(&pki.ca, None));
    assert!(refused.is_err() || refused.as_ref().is_ok_and(|r| r.is_empty()), "{refused:?}");
}

#[test]
fn bad_tls_files_are_named_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = write(dir.path(), "bogus.pem", "not a certificate");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_kura"))
        .args([
            "serve",
            "#dbm=stdhash",
            "--address",
            "127.0.0.1:0",
            "--tls_cert",
            &bogus,
            "--tls_key",
            &bogus,
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--tls_cert") && stderr.contains("bogus.pem"), "{stderr}");
}

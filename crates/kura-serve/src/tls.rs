//! TLS for `--tls_cert`/`--tls_key`, with client certificates checked
//! against `--tls_ca` when given, and for a replica's link to its master
//! (`--replica_tls`): rustls (with the ring provider) through tokio-rustls.

use std::path::Path;
use std::sync::Arc;

use kuradb::{Error, ErrorKind, Result};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::{TlsAcceptor, TlsConnector};

fn tls_error(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::InvalidArgument, format!("{what} {}: {e}", path.display()))
}

fn certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| tls_error(what, path, e))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| tls_error(what, path, e))?;
    if certs.is_empty() {
        return Err(tls_error(what, path, "no PEM certificate in it"));
    }
    Ok(certs)
}

fn roots(ca: &Path, what: &str) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for c in certificates(ca, what)? {
        roots.add(c).map_err(|e| tls_error(what, ca, e))?;
    }
    Ok(roots)
}

/// The acceptor for the certificate chain at `cert` and the key at `key`;
/// with `ca`, clients must show a certificate that CA signed.
pub fn acceptor(cert: &Path, key: &Path, ca: Option<&Path>) -> Result<TlsAcceptor> {
    let chain = certificates(cert, "--tls_cert")?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| tls_error("--tls_key", key, e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::new(ErrorKind::InvalidArgument, format!("TLS: {e}")))?;
    let builder = match ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots(ca, "--tls_ca")?), provider)
                    .build()
                    .map_err(|e| tls_error("--tls_ca", ca, e))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| Error::new(ErrorKind::InvalidArgument, format!("--tls_cert and --tls_key: {e}")))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The connector of a replica's link: the master's certificate must be
/// signed by the CA at `ca` (and carry the name the link verifies); with
/// `identity` (a certificate chain and its key), the replica shows it to a
/// master that asks for one (`--tls_ca` on the master).
pub fn connector(ca: &Path, identity: Option<(&Path, &Path)>) -> Result<TlsConnector> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::new(ErrorKind::InvalidArgument, format!("TLS: {e}")))?
        .with_root_certificates(roots(ca, "--replica_tls_ca")?);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = certificates(cert, "--replica_tls_cert")?;
            let key =
                PrivateKeyDer::from_pem_file(key).map_err(|e| tls_error("--replica_tls_key", key, e))?;
            builder.with_client_auth_cert(chain, key).map_err(|e| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("--replica_tls_cert and --replica_tls_key: {e}"),
                )
            })?
        }
    };
    Ok(TlsConnector::from(Arc::new(config)))
}

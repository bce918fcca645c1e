//! The TLS side of DNS over TLS: the router's certificate and key (PEM files, the Guest
//! Board's own by default), read again when either file changes, so a renewed certificate
//! is served without a restart. ALPN "dot" (RFC 7858, RFC 9461).

use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;

const LOOK_EVERY: Duration = Duration::from_secs(10);

pub struct Tls {
    cert: PathBuf,
    key: PathBuf,
    current: Mutex<Current>,
}

struct Current {
    config: Arc<ServerConfig>,
    stamps: (Option<SystemTime>, Option<SystemTime>),
    looked: Instant,
}

fn stamp(path: &PathBuf) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn load(cert: &PathBuf, key: &PathBuf) -> io::Result<Arc<ServerConfig>> {
    let bad = |what: &str, e: &dyn std::fmt::Display| io::Error::new(io::ErrorKind::InvalidData, format!("{what}: {e}"));
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad(&cert.display().to_string(), &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(&cert.display().to_string(), &e))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad(&key.display().to_string(), &e))?;
    let mut config = ServerConfig::builder().with_no_client_auth().with_single_cert(certs, key)
        .map_err(|e| bad("certificate and key", &e))?;
    config.alpn_protocols = vec![b"dot".to_vec()];
    Ok(Arc::new(config))
}

impl Tls {
    pub fn new(cert: PathBuf, key: PathBuf) -> io::Result<Tls> {
        let config = load(&cert, &key)?;
        let stamps = (stamp(&cert), stamp(&key));
        Ok(Tls { cert, key, current: Mutex::new(Current { config, stamps, looked: Instant::now() }) })
    }

    /// The configuration for a new connection (a changed certificate is read first; one
    /// that cannot be read leaves the old one in use).
    pub fn config(&self) -> Arc<ServerConfig> {
        let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if cur.looked.elapsed() >= LOOK_EVERY {
            cur.looked = Instant::now();
            let stamps = (stamp(&self.cert), stamp(&self.key));
            if stamps != cur.stamps {
                match load(&self.cert, &self.key) {
                    Ok(config) => {
                        cur.config = config;
                        cur.stamps = stamps;
                        eprintln!("homework-dnsd: TLS certificate {} read again", self.cert.display());
                    }
                    Err(e) => eprintln!("homework-dnsd: TLS certificate not read again ({e}); the old one stays"),
                }
            }
        }
        cur.config.clone()
    }
}

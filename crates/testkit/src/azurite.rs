//! [`Azurite`]: Microsoft's Azure Storage emulator (its Blob service), run as a process for the
//! tests of `az://` URLs: the Azure Blob REST protocol over loopback TCP, with shared-key
//! authentication, holding its blobs in memory.
//!
//! Azurite is a Node.js program. `cargo xtask azurite` installs the pinned release
//! ([`VERSION`]) with npm into `target/azurite/`; `SCIFMT_AZURITE` names the `main.js` of
//! another installation's Blob service. Without either, [`Azurite::start`] returns `None`, and
//! a test prints that it did not run — unless `SCIFMT_REQUIRE_AZURITE` is set (as `.ci/run`
//! sets it), which makes the start fail instead.
//!
//! Clients reach it as an account with a custom endpoint ([`Azurite::env`]: the emulator's
//! well-known account name and key, the endpoint `http://127.0.0.1:PORT/devstoreaccount1`,
//! plain HTTP allowed), the configuration a real account with a private endpoint has, so no
//! process-wide `AZURITE_BLOB_STORAGE_URL` is needed. Containers are made with
//! [`Azurite::create_container`] (object_store cannot make them).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::process::NoLine;

/// The Azurite release `cargo xtask azurite` installs.
pub const VERSION: &str = "3.37.0";

/// The emulator's account (Azurite's well-known development account).
pub const ACCOUNT: &str = "devstoreaccount1";

/// The well-known key of [`ACCOUNT`] (public: Azurite's documentation gives it).
pub const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// How long Azurite may take to say it listens before the start fails.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The REST API version of the requests made here.
const API_VERSION: &str = "2021-08-06";

/// A running Azurite Blob service, stopped when dropped.
#[derive(Debug)]
pub struct Azurite {
    child: Child,
    /// `127.0.0.1:PORT`.
    addr: String,
}

/// Where `cargo xtask azurite` installs Azurite: `target/azurite` of the workspace.
#[must_use]
pub fn install_dir() -> PathBuf {
    crate::process::install_dir("azurite")
}

/// The `main.js` of the Blob service: `SCIFMT_AZURITE`, else the one in [`install_dir`].
fn main_js() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SCIFMT_AZURITE") {
        return Some(PathBuf::from(p));
    }
    let p = install_dir().join("node_modules/azurite/dist/src/blob/main.js");
    p.is_file().then_some(p)
}

impl Azurite {
    /// Starts the Blob service on a free loopback port, storing blobs in memory.
    ///
    /// `Ok(None)` when Azurite is not installed (see the module docs) and
    /// `SCIFMT_REQUIRE_AZURITE` is not set.
    ///
    /// # Errors
    /// Azurite is required but missing, `node` cannot be started, or the service does not
    /// say where it listens within a minute.
    pub fn start() -> Result<Option<Self>, String> {
        let Some(main) = main_js() else {
            if std::env::var_os("SCIFMT_REQUIRE_AZURITE").is_some() {
                return Err(format!(
                    "SCIFMT_REQUIRE_AZURITE is set but Azurite is not installed in {} (run \
                     `cargo xtask azurite`) and SCIFMT_AZURITE names no other",
                    install_dir().display()
                ));
            }
            return Ok(None);
        };
        let mut child = Command::new("node")
            .arg(&main)
            .args(["--blobHost", "127.0.0.1", "--blobPort", "0"])
            .args(["--inMemoryPersistence", "--extentMemoryLimit", "512"])
            .args(["--skipApiVersionCheck", "--silent"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start node {}: {e}", main.display()))?;
        let Some(stdout) = child.stdout.take() else {
            return Err("Azurite's stdout was not captured".into());
        };
        let listening = crate::process::wait_for_line(stdout, START_TIMEOUT, |line| {
            let url = line.split("listens on ").nth(1)?;
            Some(url.trim().trim_start_matches("http://").to_owned())
        });
        let addr = match listening {
            Ok(addr) => addr,
            Err(NoLine::Ended(seen) | NoLine::Timeout(seen)) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "Azurite did not say where it listens; it printed: {seen}"
                ));
            }
        };
        Ok(Some(Self { child, addr }))
    }

    /// The account's endpoint, `http://127.0.0.1:PORT/devstoreaccount1`.
    #[must_use]
    pub fn endpoint(&self) -> String {
        format!("http://{}/{ACCOUNT}", self.addr)
    }

    /// The client configuration (object_store's `AZURE_*` keys): account, key, endpoint and
    /// plain HTTP.
    #[must_use]
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("AZURE_STORAGE_ACCOUNT_NAME".into(), ACCOUNT.into()),
            ("AZURE_STORAGE_ACCOUNT_KEY".into(), KEY.into()),
            ("AZURE_STORAGE_ENDPOINT".into(), self.endpoint()),
            ("AZURE_ALLOW_HTTP".into(), "true".into()),
        ]
    }

    /// Makes the container `name` (one that exists already is fine).
    ///
    /// # Errors
    /// The request fails or Azurite answers with another status than 201 or 409.
    pub fn create_container(&self, name: &str) -> Result<(), String> {
        let date = httpdate::fmt_http_date(SystemTime::now());
        // Shared Key: the string to sign has the standard headers (all empty here, a
        // Content-Length of 0 included), the x-ms- headers, then the resource: the account,
        // the path (which names the account again on a path-style endpoint) and the query.
        let to_sign = format!(
            "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:{API_VERSION}\n\
             /{ACCOUNT}/{ACCOUNT}/{name}\nrestype:container"
        );
        let key = STANDARD
            .decode(KEY)
            .map_err(|e| format!("the account key: {e}"))?;
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).map_err(|e| e.to_string())?;
        mac.update(to_sign.as_bytes());
        let signature = STANDARD.encode(mac.finalize().into_bytes());
        let request = format!(
            "PUT /{ACCOUNT}/{name}?restype=container HTTP/1.1\r\nHost: {addr}\r\n\
             x-ms-date: {date}\r\nx-ms-version: {API_VERSION}\r\nContent-Length: 0\r\n\
             Authorization: SharedKey {ACCOUNT}:{signature}\r\nConnection: close\r\n\r\n",
            addr = self.addr
        );
        let (status, response) =
            crate::process::http_exchange(&self.addr, &request, &[], START_TIMEOUT)?;
        if status == "201" || status == "409" {
            Ok(())
        } else {
            Err(format!("creating container {name}: {response}"))
        }
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

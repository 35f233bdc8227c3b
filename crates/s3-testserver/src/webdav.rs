//! [`WebDavServer`]: a plain HTTP server for the tests of `http(s)://` URLs, with WebDAV
//! (RFC 4918) listings, over a temporary directory.
//!
//! The server is [dav-server](https://docs.rs/dav-server) (a WebDAV handler with a local
//! filesystem backend) served by hyper on its own thread with its own tokio runtime, like
//! [`TestServer`](crate::TestServer). What object_store's HTTP store uses, it serves as a web
//! server does: `GET` and `HEAD` with byte ranges, ETags in Apache's form (inode, size and
//! modification time: a rewritten file gets a new one), conditional requests (`If-Match`,
//! `If-None-Match`, `If-(Un)Modified-Since`), `PROPFIND` listings of depth 0 and 1 (a request
//! for an infinite depth is refused, as Apache's `mod_dav` refuses it by default), `PUT`,
//! `MKCOL`, `DELETE`, `MOVE`, `COPY`.
//!
//! Tests write the served files directly below [`WebDavServer::root`].

use std::convert::Infallible;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::Path;

use dav_server::DavHandler;
use dav_server::fakels::FakeLs;
use dav_server::localfs::LocalFs;
use hyper::service::service_fn;

use crate::serve::{ServerThread, serve_http1};

/// A running WebDAV server; dropping it stops the server and deletes its files.
pub struct WebDavServer {
    /// Held for its `Drop`, which stops the server; first, so that happens before the
    /// directory is deleted.
    _server: ServerThread,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl fmt::Debug for WebDavServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebDavServer")
            .field("endpoint", &self.endpoint())
            .field("root", &self.dir.path())
            .finish_non_exhaustive()
    }
}

impl WebDavServer {
    /// Starts a server on `127.0.0.1` (a free port) serving a new temporary directory.
    ///
    /// # Errors
    /// I/O errors creating the directory, binding the socket, or starting the runtime thread.
    pub fn start() -> io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("webdav-testserver")
            .tempdir()?;
        let handler = DavHandler::builder()
            .filesystem(LocalFs::new(dir.path(), false, false, false))
            .locksystem(FakeLs::new())
            .build_handler();
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let server = ServerThread::start(
            listener,
            &format!("webdav-testserver-{}", addr.port()),
            move |stream| {
                let handler = handler.clone();
                async move {
                    let service = service_fn(move |req| {
                        let handler = handler.clone();
                        async move { Ok::<_, Infallible>(handler.handle(req).await) }
                    });
                    serve_http1(stream, service).await;
                }
            },
        )?;
        Ok(Self {
            _server: server,
            addr,
            dir,
        })
    }

    /// `http://127.0.0.1:PORT` (no trailing slash).
    #[must_use]
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The URL of `path` below the served directory (`/`-separated, no leading slash).
    #[must_use]
    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.endpoint(), path.trim_start_matches('/'))
    }

    /// The served directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        self.dir.path()
    }
}

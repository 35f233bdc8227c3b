//! [`ServerThread`]: a loopback server's accept loop on a thread and tokio runtime of its own,
//! shared by the S3 server (`TestServer`) and the WebDAV server (`WebDavServer`), so
//! synchronous and asynchronous tests use them alike.

use std::future::Future;
use std::io;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running accept loop; dropping it stops the loop and waits for its thread.
pub(crate) struct ServerThread {
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ServerThread {
    /// Accepts connections on `listener` (non-blocking, bound) on a new thread named `name`
    /// with a two-worker runtime; each connection is served by the task `connection` makes.
    pub(crate) fn start<C, F>(
        listener: std::net::TcpListener,
        name: &str,
        connection: C,
    ) -> io::Result<Self>
    where
        C: Fn(tokio::net::TcpStream) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(name)
            .enable_all()
            .build()?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                runtime.block_on(accept_loop(listener, rx, connection));
                runtime.shutdown_timeout(Duration::from_secs(2));
            })?;
        Ok(Self {
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Accepts connections until `stop` fires, each served by a task of its own.
async fn accept_loop<C, F>(
    listener: std::net::TcpListener,
    mut stop: tokio::sync::oneshot::Receiver<()>,
    connection: C,
) where
    C: Fn(tokio::net::TcpStream) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                tokio::spawn(connection(stream));
            }
        }
    }
}

/// Serves HTTP/1.1 on `stream` with `service` until the connection closes.
pub(crate) async fn serve_http1<S>(stream: tokio::net::TcpStream, service: S)
where
    S: hyper::service::HttpService<Incoming>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S::ResBody: 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

//! The exporter's HTTP client: the crate's own reqwest (rustls, ring), so no second HTTP or TLS
//! stack. The SDK's batch processor exports from a thread of its own, outside Tokio, where
//! reqwest cannot run; and the server's runtime may be busy or gone when the last batch leaves
//! (a drop at shutdown). So the requests run on one more thread with a small runtime of its
//! own, fed through a channel: exporting never depends on, nor blocks, the server's runtime.

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use tokio::sync::{mpsc, oneshot};

/// Largest answer read from a collector (they answer with a small protobuf or nothing).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

type Job = (
    Request<Bytes>,
    oneshot::Sender<Result<Response<Bytes>, HttpError>>,
);

#[derive(Debug)]
pub(super) struct ReqwestClient {
    jobs: mpsc::Sender<Job>,
}

impl ReqwestClient {
    /// Starts the sending thread; it ends when the client is dropped.
    pub(super) fn new() -> Result<ReqwestClient, super::TelemetryError> {
        // reqwest panics without a process-wide rustls provider; a second install is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(5))
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(super::TelemetryError::Client)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(super::TelemetryError::Runtime)?;
        let (jobs, mut queue) = mpsc::channel::<Job>(4);
        std::thread::Builder::new()
            .name("otlp-sender".into())
            .spawn(move || {
                runtime.block_on(async move {
                    while let Some((request, answer)) = queue.recv().await {
                        let _ = answer.send(send(&client, request).await);
                    }
                });
            })
            .map_err(super::TelemetryError::Thread)?;
        Ok(ReqwestClient { jobs })
    }
}

async fn send(
    client: &reqwest::Client,
    request: Request<Bytes>,
) -> Result<Response<Bytes>, HttpError> {
    let request = reqwest::Request::try_from(request)?;
    let mut response = client.execute(request).await?;
    let status = response.status();
    let headers = response.headers().clone();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let mut answer = Response::builder().status(status);
    if let Some(map) = answer.headers_mut() {
        *map = headers;
    }
    Ok(answer.body(Bytes::from(body))?)
}

#[async_trait::async_trait]
impl HttpClient for ReqwestClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (answer, answered) = oneshot::channel();
        self.jobs
            .send((request, answer))
            .await
            .map_err(|_| "the OTLP sender stopped")?;
        answered.await.map_err(|_| "the OTLP sender stopped")?
    }
}

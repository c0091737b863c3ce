//! The exporter's HTTP client: the crate's own reqwest (rustls, ring), so no second HTTP or TLS
//! stack. The SDK's batch processor exports from a thread of its own, outside Tokio, where
//! reqwest cannot run: each request is spawned on the runtime the exporter was built in, and
//! its result awaited from there.

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// Largest answer read from a collector (they answer with a small protobuf or nothing).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

#[derive(Debug)]
pub(super) struct ReqwestClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl ReqwestClient {
    pub(super) fn new() -> Result<ReqwestClient, String> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| "the OTLP exporter needs a Tokio runtime".to_string())?;
        // reqwest panics without a process-wide rustls provider; a second install is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(5))
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(|error| format!("the OTLP HTTP client: {error}"))?;
        Ok(ReqwestClient { client, runtime })
    }
}

#[async_trait::async_trait]
impl HttpClient for ReqwestClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let request = reqwest::Request::try_from(request)?;
            let response = client.execute(request).await?;
            let status = response.status();
            let headers = response.headers().clone();
            let mut body = Vec::new();
            let mut response = response;
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
            Ok::<_, HttpError>(answer.body(Bytes::from(body))?)
        });
        sent.await?
    }
}

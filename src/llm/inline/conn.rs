//! One HTTP/1.1 connection to the upstream and how it is polled.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

pub(super) type Sender = http1::SendRequest<Full<Bytes>>;
pub(super) type Connection = http1::Connection<TokioIo<TcpStream>, Full<Bytes>>;

/// One connection: the side that sends requests and the connection itself, which whoever
/// reads its reply polls.
pub(super) struct Conn {
    pub(super) send: Sender,
    /// `None` once it ended.
    pub(super) driver: Option<Pin<Box<Connection>>>,
}

impl Conn {
    /// Lets the connection read and write its socket (the socket wakes `cx`'s task when it can
    /// go on); the error it ended with, if it ended so.
    pub(super) fn drive(&mut self, cx: &mut Context<'_>) -> Option<hyper::Error> {
        let driver = self.driver.as_mut()?;
        match driver.as_mut().poll(cx) {
            Poll::Pending => None,
            Poll::Ready(result) => {
                self.driver = None;
                result.err()
            }
        }
    }

    /// Still open after a poll that wakes nobody (a connection the server closed ends here),
    /// and ready for a request.
    pub(super) fn reusable(&mut self) -> bool {
        self.drive(&mut Context::from_waker(Waker::noop()));
        self.driver.is_some() && self.send.is_ready()
    }
}

//! The HTTP/2 response body of a gRPC call: one answer, or a stream's
//! responses built when hyper asks for more (state of the world or delta:
//! see [`crate::sotw`] for why they are pulled, not pushed).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::task::AtomicWaker;
use http::{HeaderMap, HeaderValue, Response};
use http_body::Frame;
use tokio::sync::Notify;
use tonic::Status;

/// What a stream owes its client, as its body asks for it.
pub(crate) trait Owes: Send + Sync {
    /// How the stream's request task and its body signal each other.
    fn signals(&self) -> &Signals;
    /// The next response owed, as pieces, if any; built now.
    fn next(&self) -> Option<Vec<Bytes>>;
}

/// The signals between a stream's request task and its body.
#[derive(Default)]
pub(crate) struct Signals {
    /// Wakes the body: something may be owed.
    body: AtomicWaker,
    /// Set when the body is dropped (the stream is gone).
    closed: AtomicBool,
    closed_notify: Notify,
    /// End the stream with this status, once what is being sent is sent.
    end: Mutex<Option<Status>>,
}

impl Signals {
    /// Tells the body something may be owed.
    pub(crate) fn wake(&self) {
        self.body.wake();
    }

    /// Ends the stream with `status` once what is being written is written.
    pub(crate) fn end(&self, status: Status) {
        self.end
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(status);
        self.wake();
    }

    fn take_end(&self) -> Option<Status> {
        self.end.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// The body is gone: the request task stops.
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.closed_notify.notify_one();
    }

    /// Resolves once the body is gone.
    pub(crate) async fn closed(&self) {
        loop {
            let notified = self.closed_notify.notified();
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

/// Pieces smaller than this are sent together, copied into a frame of at
/// most this size: a route table is a piece per virtual host (a few hundred
/// bytes, often), and a DATA frame each would cost HTTP/2 framing and a
/// write per virtual host. Larger pieces go as they are, shared. The copy
/// is made only when hyper asks for data, so an unread stream holds none.
const GATHER: usize = 16 * 1024;

/// The response body of one stream, or of a single answer.
pub struct ResponseBody {
    /// The pieces of the response being written.
    pieces: VecDeque<Bytes>,
    /// A stream's: what it is owed.
    outbox: Option<Arc<dyn Owes>>,
    /// The status for the trailers, once the call ends.
    end: Option<Status>,
    /// The trailers went out: nothing more.
    done: bool,
}

impl Default for ResponseBody {
    /// No data (a response whose headers carry the status).
    fn default() -> Self {
        Self {
            pieces: VecDeque::new(),
            outbox: None,
            end: None,
            done: true,
        }
    }
}

impl ResponseBody {
    /// The body of a stream: whatever `outbox` is owed, as it is owed.
    pub(crate) fn stream(outbox: Arc<dyn Owes>) -> Self {
        Self {
            pieces: VecDeque::new(),
            outbox: Some(outbox),
            end: None,
            done: false,
        }
    }

    /// One response, then an OK status.
    pub(crate) fn once(pieces: Vec<Bytes>) -> Self {
        Self {
            pieces: pieces.into(),
            outbox: None,
            end: Some(Status::ok("")),
            done: false,
        }
    }

    /// The gRPC response carrying this body.
    pub(crate) fn into_response(self) -> Response<Self> {
        let mut response = Response::new(self);
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        response
    }
}

impl ResponseBody {
    /// The next frame's data: the next piece, or the small pieces from it
    /// on gathered into one buffer (see [`GATHER`]).
    fn next_data(&mut self) -> Option<Bytes> {
        let first = self.pieces.pop_front()?;
        if self.pieces.front().is_none_or(|next| first.len() + next.len() > GATHER) {
            return Some(first);
        }
        let mut data = BytesMut::with_capacity(GATHER);
        data.extend_from_slice(&first);
        while let Some(next) = self.pieces.front()
            && data.len() + next.len() <= GATHER
        {
            data.extend_from_slice(next);
            self.pieces.pop_front();
        }
        Some(data.freeze())
    }
}

fn trailers(status: &Status) -> HeaderMap {
    let mut trailers = HeaderMap::new();
    // Fails only for a message that is not valid in a header; tonic
    // percent-encodes ours.
    let _ = status.add_header(&mut trailers);
    trailers
}

impl http_body::Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(data) = self.next_data() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if self.done {
            return Poll::Ready(None);
        }
        if let Some(outbox) = self.outbox.clone() {
            // Registered before looking, so a change after the look wakes us.
            outbox.signals().body.register(cx.waker());
            if let Some(pieces) = outbox.next() {
                self.pieces = pieces.into();
                if let Some(data) = self.next_data() {
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
            }
            if let Some(status) = outbox.signals().take_end() {
                self.end = Some(status);
            }
        }
        match self.end.take() {
            Some(status) => {
                self.done = true;
                Poll::Ready(Some(Ok(Frame::trailers(trailers(&status)))))
            }
            None => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.pieces.is_empty()
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        if let Some(outbox) = &self.outbox {
            outbox.signals().close();
        }
    }
}

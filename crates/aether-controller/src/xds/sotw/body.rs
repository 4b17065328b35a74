//! The HTTP/2 response body of a gRPC call: one answer, or a stream's
//! responses built when hyper asks for more (see the parent module).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Response};
use http_body::Frame;
use tonic::Status;

use super::Outbox;

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
    outbox: Option<Arc<Outbox>>,
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
    pub(crate) fn stream(outbox: Arc<Outbox>) -> Self {
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
            outbox.body.register(cx.waker());
            if let Some(pieces) = outbox.next() {
                self.pieces = pieces.into();
                if let Some(data) = self.next_data() {
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
            }
            if let Some(status) = outbox.take_end() {
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
            outbox.close();
        }
    }
}

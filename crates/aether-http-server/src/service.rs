//! The caller's service, counted: a request is in flight from the call
//! until its response body ends or is dropped (for an xDS stream, the
//! stream's whole life), and a connection with one is never idle.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

use crate::BoxError;
use crate::registry::{Conn, RequestGuard};

/// `S`, counting its requests on one connection.
pub(crate) struct Counted<S> {
    pub(crate) inner: S,
    pub(crate) conn: Arc<Conn>,
    /// HTTP/1: the largest request head, checked again here (see
    /// [`head_bytes`]), and its transfer codings ([`only_chunked`]);
    /// `None` for HTTP/2, whose frames hyper bounds and which has none.
    pub(crate) max_head_bytes: Option<usize>,
}

/// Whether `request`'s transfer codings, if any, are `chunked` alone: the
/// only one hyper decodes. hyper takes `gzip, chunked` as chunked and
/// hands on the body still gzipped, which a service then reads as plain;
/// a server must refuse a coding it does not implement (RFC 9112, 6.1:
/// 501).
fn only_chunked<B>(request: &Request<B>) -> bool {
    let mut codings = request
        .headers()
        .get_all(hyper::header::TRANSFER_ENCODING)
        .iter()
        .flat_map(|value| value.as_bytes().split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|coding| !coding.is_empty());
    match (codings.next(), codings.next()) {
        (None, _) => true,
        (Some(coding), None) => coding.eq_ignore_ascii_case(b"chunked"),
        (Some(_), Some(_)) => false,
    }
}

/// The bytes of `request`'s HTTP/1 head as sent, less any whitespace
/// around header values (which hyper drops): its request line, each
/// header's `name: value` line, the blank line. hyper bounds its read
/// buffer (`max_buf_size`), but a head that arrives whole in one read,
/// while the buffer was below the bound, is parsed all the same: 100 KiB
/// in one burst passed a 64 KiB bound. The service sees it whole, so it is
/// measured here.
fn head_bytes<B>(request: &Request<B>) -> usize {
    let target = request
        .uri()
        .path_and_query()
        .map_or(request.uri().to_string().len(), |p| p.as_str().len());
    // `METHOD TARGET HTTP/1.1\r\n`, then `name: value\r\n` each, then `\r\n`.
    let line = request.method().as_str().len() + 1 + target + 1 + 8 + 2;
    let headers: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + 2 + value.len() + 2)
        .sum();
    line + headers + 2
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> hyper::service::Service<Request<Incoming>> for Counted<S>
where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
{
    type Response = Response<GuardedBody<B>>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Self::Response, BoxError>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let guard = self.conn.begin();
        let refused = match self.max_head_bytes {
            Some(max) if head_bytes(&request) > max => Some(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE),
            Some(_) if !only_chunked(&request) => Some(StatusCode::NOT_IMPLEMENTED),
            _ => None,
        };
        if let Some(status) = refused {
            // As hyper answers a head above its buffer: no body, and the
            // connection closed (its reading stopped mid-request).
            let mut response = Response::new(GuardedBody {
                inner: None,
                guard: Some(guard),
            });
            *response.status_mut() = status;
            response.headers_mut().insert(
                hyper::header::CONNECTION,
                hyper::header::HeaderValue::from_static("close"),
            );
            return Box::pin(async move { Ok(response) });
        }
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await.map_err(Into::into)?;
            Ok(response.map(|inner| GuardedBody {
                inner: Some(inner),
                guard: Some(guard),
            }))
        })
    }
}

pin_project_lite::pin_project! {
    /// A response body that ends its request when it ends; empty when
    /// the request was refused before the service saw it.
    pub(crate) struct GuardedBody<B> {
        #[pin]
        inner: Option<B>,
        guard: Option<RequestGuard>,
    }
}

impl<B: Body> Body for GuardedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let frame = match this.inner.as_pin_mut() {
            Some(inner) => inner.poll_frame(cx),
            None => Poll::Ready(None),
        };
        if matches!(frame, Poll::Ready(None | Some(Err(_)))) {
            this.guard.take();
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}

//! The caller's service, counted: a request is in flight from the call
//! until its response body ends or is dropped (for an xDS stream, the
//! stream's whole life), and a connection with one is never idle.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::{Request, Response};

use crate::BoxError;
use crate::registry::{Conn, RequestGuard};

/// `S`, counting its requests on one connection.
pub(crate) struct Counted<S> {
    pub(crate) inner: S,
    pub(crate) conn: Arc<Conn>,
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
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await.map_err(Into::into)?;
            Ok(response.map(|inner| GuardedBody {
                inner,
                guard: Some(guard),
            }))
        })
    }
}

pin_project_lite::pin_project! {
    /// A response body that ends its request when it ends.
    pub(crate) struct GuardedBody<B> {
        #[pin]
        inner: B,
        guard: Option<RequestGuard>,
    }
}

impl<B: Body> Body for GuardedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let frame = this.inner.poll_frame(cx);
        if matches!(frame, Poll::Ready(None | Some(Err(_)))) {
            this.guard.take();
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

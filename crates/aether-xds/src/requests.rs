//! The request messages of xDS streams, decoded within one budget for the
//! bytes buffered across every stream of the server.
//!
//! A stream buffers a request until its last byte arrives (at most
//! [`MAX_REQUEST_BYTES`] each), and a server holds up to 1,024 connections
//! of 16 streams: without a shared bound, unfinished requests alone could
//! hold 256 GiB. Every stream's buffer is counted in one
//! [`RequestBudget`]; a frame that would take the total past it ends the
//! stream holding the most (`RESOURCE_EXHAUSTED`), which is the newcomer
//! itself when it holds the most: whoever buffers the most pays, and a
//! client sending whole, small requests (Envoy's) is served meanwhile.

use std::collections::{HashMap, VecDeque};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use envoy_types::pb::envoy::service::discovery::v3::DiscoveryRequest;
use futures_util::Stream;
use futures_util::task::AtomicWaker;
use http_body::Body;
use hyper::body::Incoming;
use prost::{Message, Name};
use tonic::Status;
use tracing::warn;

use crate::metrics::{Refused, XdsMetrics};

/// Largest request message: 16 MiB. Envoy's carry its node (id, metadata,
/// the extensions it was built with), tens of KB, and the names it asks
/// for: an Envoy reconnecting to an edge of 50,000 HTTPS objects names
/// every chain's route configuration and secret, with the versions it
/// holds, in one delta request (1.6 MB measured with the bench's names;
/// 1 MiB, the bound before, cut it off on every reconnect). 16 MiB is
/// 50,000 names of about 150 bytes with their versions; what streams
/// buffer together stays bounded by [`MAX_BUFFERED_REQUEST_BYTES`].
pub const MAX_REQUEST_BYTES: usize = 16 << 20;

/// The bytes of unfinished requests buffered across every stream of one
/// server: 64 MiB. An Envoy's requests are a few KB and are decoded as
/// soon as they are whole, so 1,024 Envoys with three streams each hold
/// well under it; a client that holds 1 MiB requests open on many
/// streams (16 GiB at the connection bound before) is cut off at it.
pub const MAX_BUFFERED_REQUEST_BYTES: usize = 64 << 20;

/// The gRPC message prefix: a compression flag and a 4-byte length.
const PREFIX: usize = 5;

/// The shared count of buffered request bytes, and who holds them.
pub struct RequestBudget {
    limit: usize,
    state: Mutex<State>,
    /// Told of each stream ended for its request.
    metrics: Arc<dyn XdsMetrics>,
}

impl std::fmt::Debug for RequestBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestBudget")
            .field("limit", &self.limit)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct State {
    total: usize,
    next_id: u64,
    holders: HashMap<u64, Holder>,
}

#[derive(Debug)]
struct Holder {
    bytes: usize,
    evicted: Arc<Evicted>,
}

/// Set when another stream's frame ended this one; wakes it.
#[derive(Debug, Default)]
struct Evicted {
    flag: AtomicBool,
    waker: AtomicWaker,
}

impl RequestBudget {
    /// A budget of `limit` bytes; the streams it ends, and those ended
    /// for a request over [`MAX_REQUEST_BYTES`], are counted in `metrics`.
    pub fn new(limit: usize, metrics: Arc<dyn XdsMetrics>) -> Arc<Self> {
        Arc::new(Self {
            limit,
            state: Mutex::new(State::default()),
            metrics,
        })
    }

    /// The bytes buffered now, across every stream.
    pub fn buffered(&self) -> usize {
        self.lock().total
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn register(&self) -> (u64, Arc<Evicted>) {
        let mut state = self.lock();
        let id = state.next_id;
        state.next_id += 1;
        let evicted = Arc::new(Evicted::default());
        state.holders.insert(
            id,
            Holder {
                bytes: 0,
                evicted: evicted.clone(),
            },
        );
        (id, evicted)
    }

    /// Takes `bytes` more for stream `id`, ending the streams that hold the
    /// most until they fit; `false` when `id` itself holds the most (or
    /// was ended already): it gets nothing.
    fn reserve(&self, id: u64, bytes: usize) -> bool {
        let mut state = self.lock();
        loop {
            let Some(own) = state.holders.get(&id).map(|holder| holder.bytes + bytes) else {
                return false;
            };
            if state.total + bytes <= self.limit {
                state.total += bytes;
                if let Some(holder) = state.holders.get_mut(&id) {
                    holder.bytes = own;
                }
                return true;
            }
            // O(streams), only when the budget is full; each round ends a
            // stream, so a flood pays for its own scans.
            let victim = state
                .holders
                .iter()
                .filter(|(other, _)| **other != id)
                .max_by_key(|(_, holder)| holder.bytes)
                .map(|(other, holder)| (*other, holder.bytes));
            match victim {
                Some((other, held)) if held > own => {
                    if let Some(holder) = state.holders.remove(&other) {
                        state.total -= holder.bytes;
                        holder.evicted.flag.store(true, Ordering::Release);
                        holder.evicted.waker.wake();
                    }
                }
                _ => return false,
            }
        }
    }

    /// Gives back `bytes` of stream `id` (nothing if it was ended).
    fn release(&self, id: u64, bytes: usize) {
        let mut state = self.lock();
        if let Some(holder) = state.holders.get_mut(&id) {
            holder.bytes -= bytes;
            state.total -= bytes;
        }
    }

    fn unregister(&self, id: u64) {
        let mut state = self.lock();
        if let Some(holder) = state.holders.remove(&id) {
            state.total -= holder.bytes;
        }
    }
}

/// One call's request messages of type `M` (`DiscoveryRequest`, or
/// `DeltaDiscoveryRequest` for delta xDS; uncompressed: this server never
/// offers compression), each at most [`MAX_REQUEST_BYTES`], buffered within
/// `budget`.
pub struct Requests<B = Incoming, M = DiscoveryRequest> {
    body: B,
    /// The frames received and not yet decoded, kept as they came (no copy
    /// until a message is whole), and their bytes.
    chunks: VecDeque<Bytes>,
    pending: usize,
    budget: Arc<RequestBudget>,
    id: u64,
    evicted: Arc<Evicted>,
    done: bool,
    message: PhantomData<fn() -> M>,
}

impl<B, M: Message + Name + Default> Requests<B, M> {
    /// The messages of `body`, counted in `budget`.
    pub fn new(body: B, budget: Arc<RequestBudget>) -> Self {
        let (id, evicted) = budget.register();
        Self {
            body,
            chunks: VecDeque::new(),
            pending: 0,
            budget,
            id,
            evicted,
            done: false,
            message: PhantomData,
        }
    }

    /// Ends the stream with `status`, its bytes given back.
    fn fail(&mut self, status: Status) -> Poll<Option<Result<M, Status>>> {
        self.done = true;
        self.budget.unregister(self.id);
        self.chunks = VecDeque::new();
        self.pending = 0;
        Poll::Ready(Some(Err(status)))
    }

    fn over_budget(&mut self) -> Poll<Option<Result<M, Status>>> {
        self.budget.metrics.stream_refused(Refused::RequestBudget);
        warn!(
            limit = self.budget.limit,
            "xds: a stream holding the most unfinished request bytes is ended: the server's budget is full"
        );
        self.fail(Status::resource_exhausted(format!(
            "the server's {} bytes for unfinished requests are taken, and this stream held the most",
            self.budget.limit
        )))
    }

    /// The next whole message received, if any, or the error that ends the
    /// stream.
    fn decode(&mut self) -> Option<Result<M, Status>> {
        if self.pending < PREFIX {
            return None;
        }
        let mut prefix = [0u8; PREFIX];
        let mut filled = 0;
        for chunk in &self.chunks {
            let n = chunk.len().min(PREFIX - filled);
            prefix[filled..filled + n].copy_from_slice(&chunk[..n]);
            filled += n;
            if filled == PREFIX {
                break;
            }
        }
        if prefix[0] != 0 {
            return Some(Err(Status::internal(
                "a compressed request: this server offers no compression",
            )));
        }
        let length = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        if length > MAX_REQUEST_BYTES {
            self.budget.metrics.stream_refused(Refused::RequestTooLarge);
            warn!(
                length,
                limit = MAX_REQUEST_BYTES,
                "xds: a stream sending a request over the limit is ended"
            );
            return Some(Err(Status::out_of_range(format!(
                "a request of {length} bytes; the limit is {MAX_REQUEST_BYTES}"
            ))));
        }
        if self.pending < PREFIX + length {
            return None;
        }
        let message = self.take(PREFIX + length).slice(PREFIX..);
        self.budget.release(self.id, PREFIX + length);
        Some(M::decode(message).map_err(|err| Status::invalid_argument(format!("not a {}: {err}", M::NAME))))
    }

    /// The first `n` received bytes (`n` <= `pending`): a slice of the
    /// first frame when it holds them all, else copied together once.
    fn take(&mut self, n: usize) -> Bytes {
        self.pending -= n;
        if let Some(first) = self.chunks.front_mut()
            && first.len() >= n
        {
            let taken = first.split_to(n);
            if first.is_empty() {
                self.chunks.pop_front();
            }
            return taken;
        }
        let mut whole = Vec::with_capacity(n);
        while whole.len() < n {
            let Some(chunk) = self.chunks.front_mut() else {
                break;
            };
            let part = chunk.len().min(n - whole.len());
            whole.extend_from_slice(&chunk.split_to(part));
            if chunk.is_empty() {
                self.chunks.pop_front();
            }
        }
        Bytes::from(whole)
    }
}

impl<B, M> Stream for Requests<B, M>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
    M: Message + Name + Default,
{
    type Item = Result<M, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(decoded) = this.decode() {
                return match decoded {
                    Ok(request) => Poll::Ready(Some(Ok(request))),
                    Err(status) => this.fail(status),
                };
            }
            this.evicted.waker.register(cx.waker());
            if this.evicted.flag.load(Ordering::Acquire) {
                return this.over_budget();
            }
            let frame = match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    this.done = true;
                    this.budget.unregister(this.id);
                    return if this.pending == 0 {
                        Poll::Ready(None)
                    } else {
                        Poll::Ready(Some(Err(Status::internal("the stream ended within a request"))))
                    };
                }
                Poll::Ready(Some(Err(err))) => {
                    return this.fail(Status::unknown(format!("reading the request: {err}")));
                }
                Poll::Ready(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers: the end follows
            };
            if data.is_empty() {
                continue;
            }
            if !this.budget.reserve(this.id, data.len()) {
                return this.over_budget();
            }
            this.pending += data.len();
            this.chunks.push_back(data);
        }
    }
}

impl<B, M> Drop for Requests<B, M> {
    fn drop(&mut self) {
        self.budget.unregister(self.id);
    }
}

#[cfg(test)]
mod tests;

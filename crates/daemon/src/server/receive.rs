//! The receive budget: request bytes held by messages still being received, counted before
//! tonic decodes them, and the limit on connections per listener.
//!
//! Every gRPC request body passes through [`ReceiveBudget::count`]. When a message's 5-byte
//! length prefix arrives, the message's whole announced length (plus the prefix) is charged
//! at once to the shared count, or the call is refused with RESOURCE_EXHAUSTED
//! (`receive_busy`) and the retry hint before another byte of it is buffered. The charge is
//! released when the request body is dropped: tonic drops it once the message is decoded
//! and the stream has ended, before the service's handler runs (where the intake charges
//! the decoded request), or when the call ends early.
//!
//! A message is "small" when its announced length is at most the small-message size; small
//! messages may use the whole budget, larger ones only what is left after the reserved
//! share. Before decoding the proof kind is unknown; the size is what tells a PoSt (tens of
//! MiB at most) from the largest PoRep and SnapDeals messages.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http_body::{Body as HttpBody, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_stream::{Stream, StreamExt as _};
use tonic::body::Body;
use tonic::codegen::http::Request;
use tonic::codegen::Bytes;
use tonic::transport::server::Connected;
use tonic::Status;

use super::intake::exhausted;

/// Length of the gRPC message prefix: a compression flag and a 4-byte big-endian length.
const PREFIX_BYTES: usize = 5;

/// The resolved receive limits (from `[intake]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiveLimits {
    /// Bytes all messages being received may hold together.
    pub receiving_bytes: u64,
    /// Largest announced length that counts as a small message.
    pub small_message_bytes: u64,
    /// Percent of `receiving_bytes` only small messages may use.
    pub small_reserved_percent: u8,
    /// Largest message tonic accepts (`server.max_message_bytes`); a longer one is left to
    /// tonic's own refusal (`message_too_large`) and not charged.
    pub max_message_bytes: u64,
    /// The retry hint, seconds.
    pub retry_after_secs: u64,
}

impl ReceiveLimits {
    /// What a message above the small-message size may use of the budget.
    pub fn large_share(&self) -> u64 {
        let percent = 100 - u128::from(self.small_reserved_percent.min(100));
        (u128::from(self.receiving_bytes) * percent / 100) as u64
    }

    /// What a message announcing `len` bytes may use of the budget.
    fn share(&self, len: u64) -> u64 {
        if len <= self.small_message_bytes {
            self.receiving_bytes
        } else {
            self.large_share()
        }
    }
}

/// The shared count of bytes held by messages being received.
#[derive(Debug)]
pub struct ReceiveBudget {
    limits: ReceiveLimits,
    held: Mutex<u64>,
    refused_small: AtomicU64,
    refused_large: AtomicU64,
}

/// Calls the budget refused since the daemon started, by the size of their message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refused {
    /// Messages of at most the small-message size.
    pub small: u64,
    /// Larger messages.
    pub large: u64,
}

/// Bytes charged to the budget, released on drop.
#[derive(Debug)]
struct Charge {
    budget: Arc<ReceiveBudget>,
    bytes: u64,
}

impl Drop for Charge {
    fn drop(&mut self) {
        *self.budget.held() -= self.bytes;
    }
}

impl ReceiveBudget {
    /// A budget over `limits`.
    pub fn new(limits: ReceiveLimits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            held: Mutex::new(0),
            refused_small: AtomicU64::new(0),
            refused_large: AtomicU64::new(0),
        })
    }

    fn held(&self) -> std::sync::MutexGuard<'_, u64> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes held now by messages being received.
    pub fn held_bytes(&self) -> u64 {
        *self.held()
    }

    /// The budget, bytes (`intake.max_receiving_bytes`).
    pub fn limit_bytes(&self) -> u64 {
        self.limits.receiving_bytes
    }

    /// Calls refused so far.
    pub fn refused(&self) -> Refused {
        Refused {
            small: self.refused_small.load(Ordering::Relaxed),
            large: self.refused_large.load(Ordering::Relaxed),
        }
    }

    /// Charges a message announcing `len` bytes, or refuses it.
    fn charge(self: &Arc<Self>, len: u64) -> Result<Charge, Status> {
        let bytes = len + PREFIX_BYTES as u64;
        let share = self.limits.share(len);
        let mut held = self.held();
        if *held + bytes > share {
            let why = format!(
                "{} bytes of messages being received, {bytes} more would pass the {share} bytes \
                 a message of {len} bytes may use",
                *held
            );
            drop(held);
            let refused = if len <= self.limits.small_message_bytes {
                &self.refused_small
            } else {
                &self.refused_large
            };
            refused.fetch_add(1, Ordering::Relaxed);
            return Err(exhausted(
                "receive_busy",
                &why,
                self.limits.retry_after_secs,
            ));
        }
        *held += bytes;
        Ok(Charge {
            budget: self.clone(),
            bytes,
        })
    }

    /// Wraps a request's body so that its messages are charged as their prefixes arrive.
    pub fn count(self: &Arc<Self>, request: Request<Body>) -> Request<Body> {
        let budget = self.clone();
        request.map(|body| {
            Body::new(CountedBody {
                inner: body,
                budget,
                prefix: [0; PREFIX_BYTES],
                prefix_len: 0,
                remaining: 0,
                charges: Vec::new(),
            })
        })
    }
}

/// A request body whose messages are charged to a [`ReceiveBudget`].
struct CountedBody {
    inner: Body,
    budget: Arc<ReceiveBudget>,
    /// The prefix of the next message, as far as it has arrived.
    prefix: [u8; PREFIX_BYTES],
    prefix_len: usize,
    /// Bytes of the current message still to come.
    remaining: u64,
    /// One charge per message of this body, held until the body is dropped.
    charges: Vec<Charge>,
}

impl CountedBody {
    /// Follows the message framing through `data`, charging each message at its prefix.
    fn account(&mut self, mut data: &[u8]) -> Result<(), Status> {
        while !data.is_empty() {
            if self.remaining > 0 {
                let n = data
                    .len()
                    .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
                self.remaining -= n as u64;
                data = &data[n..];
                continue;
            }
            let n = data.len().min(PREFIX_BYTES - self.prefix_len);
            self.prefix[self.prefix_len..self.prefix_len + n].copy_from_slice(&data[..n]);
            self.prefix_len += n;
            data = &data[n..];
            if self.prefix_len == PREFIX_BYTES {
                self.prefix_len = 0;
                let len = u64::from(u32::from_be_bytes([
                    self.prefix[1],
                    self.prefix[2],
                    self.prefix[3],
                    self.prefix[4],
                ]));
                self.remaining = len;
                if len <= self.budget.limits.max_message_bytes {
                    self.charges.push(self.budget.charge(len)?);
                }
            }
        }
        Ok(())
    }
}

impl HttpBody for CountedBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            other => return other,
        };
        if let Some(data) = frame.data_ref() {
            if let Err(refusal) = self.account(data) {
                return Poll::Ready(Some(Err(refusal)));
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A connection a listener admitted: it holds one of the listener's connection slots until
/// it is dropped (when the connection closes).
pub struct Admitted<IO> {
    io: IO,
    _slot: OwnedSemaphorePermit,
}

impl<IO> Admitted<IO> {
    /// The same slot over another stream (the unix socket's authority relay).
    pub fn map_io<T>(self, f: impl FnOnce(IO) -> T) -> Admitted<T> {
        Admitted {
            io: f(self.io),
            _slot: self._slot,
        }
    }
}

/// Admits at most `max` connections of `incoming` at once; one beyond is closed as soon as
/// it is accepted (the caller sees the connection closed, UNAVAILABLE, and retries).
pub fn limit_connections<IO, E>(
    incoming: impl Stream<Item = Result<IO, E>>,
    max: usize,
    listener: &'static str,
) -> impl Stream<Item = Result<Admitted<IO>, E>> {
    let slots = Arc::new(Semaphore::new(max));
    // A warning for the first connection closed after one was admitted; the rest of a
    // flood at debug level, so that it cannot flood the log.
    let mut refusing = false;
    incoming.filter_map(move |c| match c {
        Err(e) => Some(Err(e)),
        Ok(io) => match slots.clone().try_acquire_owned() {
            Ok(slot) => {
                refusing = false;
                Some(Ok(Admitted { io, _slot: slot }))
            }
            Err(_) => {
                if std::mem::replace(&mut refusing, true) {
                    tracing::debug!(listener, max, "connection closed at once");
                } else {
                    tracing::warn!(
                        listener,
                        max,
                        "connection closed at once: intake.max_connections are open"
                    );
                }
                None
            }
        },
    })
}

impl<IO: Connected> Connected for Admitted<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Admitted<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Admitted<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ReceiveLimits {
        ReceiveLimits {
            receiving_bytes: 1000,
            small_message_bytes: 100,
            small_reserved_percent: 30,
            max_message_bytes: 600,
            retry_after_secs: 4,
        }
    }

    fn body(budget: &Arc<ReceiveBudget>) -> CountedBody {
        CountedBody {
            inner: Body::empty(),
            budget: budget.clone(),
            prefix: [0; PREFIX_BYTES],
            prefix_len: 0,
            remaining: 0,
            charges: Vec::new(),
        }
    }

    fn prefix(len: u32) -> Vec<u8> {
        let mut p = vec![0];
        p.extend_from_slice(&len.to_be_bytes());
        p
    }

    #[test]
    fn a_message_is_charged_at_its_prefix_and_released_with_its_body() {
        let budget = ReceiveBudget::new(limits());
        let mut b = body(&budget);
        // The prefix split over two frames: nothing charged until it is whole.
        let p = prefix(400);
        b.account(&p[..2]).unwrap();
        assert_eq!(budget.held_bytes(), 0);
        b.account(&p[2..]).unwrap();
        assert_eq!(budget.held_bytes(), 405);
        b.account(&[7; 400]).unwrap();
        assert_eq!(budget.held_bytes(), 405);
        // A second message of the same body (a client stream) is charged too.
        let mut next = prefix(10);
        next.extend_from_slice(&[1; 10]);
        b.account(&next).unwrap();
        assert_eq!(budget.held_bytes(), 420);
        drop(b);
        assert_eq!(budget.held_bytes(), 0);
    }

    #[test]
    fn large_messages_leave_the_reserve_to_small_ones() {
        let budget = ReceiveBudget::new(limits());
        // Large messages may use 700 of the 1000 bytes.
        let mut large = body(&budget);
        large.account(&prefix(600)).unwrap();
        let e = body(&budget).account(&prefix(101)).unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert!(e.message().starts_with("receive_busy:"), "{}", e.message());
        assert!(e.message().contains("retry after 4 s"), "{}", e.message());
        assert_eq!(
            e.metadata()
                .get(super::super::intake::RETRY_PUSHBACK_KEY)
                .map(|v| v.to_str().unwrap()),
            Some("4000")
        );
        // Small ones use the rest, up to the whole budget.
        let mut small = Vec::new();
        for _ in 0..3 {
            let mut s = body(&budget);
            s.account(&prefix(100)).unwrap();
            small.push(s);
        }
        assert_eq!(budget.held_bytes(), 605 + 3 * 105);
        assert!(body(&budget).account(&prefix(100)).is_err());
        assert_eq!(budget.refused(), Refused { small: 1, large: 1 });
        drop(large);
        body(&budget).account(&prefix(101)).unwrap();
        assert_eq!(budget.refused(), Refused { small: 1, large: 1 });
    }

    #[test]
    fn messages_over_the_message_limit_are_left_to_tonic() {
        let budget = ReceiveBudget::new(limits());
        let mut b = body(&budget);
        b.account(&prefix(u32::MAX)).unwrap();
        assert_eq!(budget.held_bytes(), 0);
    }
}

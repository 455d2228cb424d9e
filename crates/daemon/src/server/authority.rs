//! Unix-socket connections with a valid `:authority`.
//!
//! A gRPC client that dials a unix socket has no host name to send, and several send the
//! socket path as `:authority` (grpcio and grpc C++ percent-encoded, grpc-java and older
//! grpcurl as is). The HTTP/2 layer under tonic (h2) refuses such a request with
//! PROTOCOL_ERROR before the service sees it. So each unix-socket connection is relayed:
//! the client's header blocks are decoded (HPACK, with the client's dynamic table) and
//! re-encoded as literals, with `:authority` set to `localhost` where the client's is not
//! a valid authority; every other frame passes unchanged, and the server's bytes go back
//! untouched. A connection that breaks HTTP/2's framing rules is closed.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::net::UnixStream;

/// The HTTP/2 client connection preface.
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// Every HTTP/2 peer accepts frames of this size (RFC 9113 §4.2).
const MAX_FRAME: usize = 16_384;
/// Largest header block (compressed) and header list (decoded) relayed; gRPC's are a few
/// hundred bytes, and the server refuses more than 16 KiB anyway.
const MAX_HEADER_BLOCK: usize = 256 << 10;
/// Largest dynamic table a client may ask the relay's decoder for.
const MAX_HPACK_TABLE: usize = 64 << 10;
/// Bytes in flight between the relay and the server, each way.
const RELAY_BUFFER: usize = 256 << 10;
/// The authority put in place of an invalid one.
const LOCALHOST: &[u8] = b"localhost";

/// Relays `client` to the returned stream (serve it in its place), fixing `:authority`.
/// The relay task ends when either side closes.
pub fn relay(client: UnixStream) -> DuplexStream {
    let (served, relay_end) = tokio::io::duplex(RELAY_BUFFER);
    tokio::spawn(async move {
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = tokio::io::split(relay_end);
        let up = forward_client(client_read, server_write);
        let down = forward_server(server_read, client_write);
        tokio::pin!(up, down);
        tokio::select! {
            r = &mut up => match r {
                // The client finished sending; its answers may still be on their way.
                Ok(()) => {
                    let _ = down.await;
                }
                Err(e) => tracing::debug!(error = %e, "unix socket connection closed"),
            },
            _ = &mut down => {}
        }
    });
    served
}

async fn forward_server(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
) -> io::Result<()> {
    tokio::io::copy(&mut from, &mut to).await?;
    to.shutdown().await
}

fn protocol(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// Reads exactly `buf.len()` bytes; `Ok(false)` on a clean end of stream before the first.
async fn read_frame_head(from: &mut (impl AsyncRead + Unpin), buf: &mut [u8]) -> io::Result<bool> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = from.read(&mut buf[filled..]).await?;
        if n == 0 {
            return match filled {
                0 => Ok(false),
                _ => Err(protocol("connection ended inside a frame header")),
            };
        }
        filled += n;
    }
    Ok(true)
}

/// Copies the client's bytes to the server, rewriting header blocks.
async fn forward_client(
    from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
) -> io::Result<()> {
    let mut from = BufReader::with_capacity(64 << 10, from);
    let mut preface = [0u8; 24];
    from.read_exact(&mut preface).await?;
    to.write_all(&preface).await?;
    if &preface != PREFACE {
        // Not HTTP/2 with prior knowledge: nothing to fix; the server answers it.
        tokio::io::copy(&mut from, &mut to).await?;
        return to.shutdown().await;
    }
    let mut rewriter = HeaderRewriter::new();
    let mut head = [0u8; 9];
    while read_frame_head(&mut from, &mut head).await? {
        let frame = FrameHead::parse(&head);
        if frame.kind == HEADERS || frame.kind == CONTINUATION {
            if frame.len > MAX_HEADER_BLOCK {
                return Err(protocol("header frame too large"));
            }
            let mut payload = vec![0u8; frame.len];
            from.read_exact(&mut payload).await?;
            if let Some(frames) = rewriter.push(&frame, payload)? {
                to.write_all(&frames).await?;
                to.flush().await?;
            }
            continue;
        }
        if rewriter.in_block() {
            return Err(protocol(
                "a frame other than CONTINUATION inside a header block",
            ));
        }
        to.write_all(&head).await?;
        let copied = tokio::io::copy(&mut (&mut from).take(frame.len as u64), &mut to).await?;
        if copied != frame.len as u64 {
            return Err(protocol("connection ended inside a frame"));
        }
        to.flush().await?;
    }
    to.shutdown().await
}

/// An HTTP/2 frame header.
#[derive(Clone, Copy, Debug)]
struct FrameHead {
    len: usize,
    kind: u8,
    flags: u8,
    stream: u32,
}

impl FrameHead {
    fn parse(b: &[u8; 9]) -> Self {
        Self {
            len: usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        let len = self.len as u32;
        out.extend_from_slice(&len.to_be_bytes()[1..]);
        out.push(self.kind);
        out.push(self.flags);
        out.extend_from_slice(&self.stream.to_be_bytes());
    }
}

/// A header block being received (HEADERS, then CONTINUATION until END_HEADERS).
struct PendingBlock {
    stream: u32,
    /// END_STREAM and PRIORITY of the HEADERS frame.
    flags: u8,
    /// The stream dependency and weight, when PRIORITY is set.
    priority: Vec<u8>,
    block: Vec<u8>,
}

/// Decodes the client's header blocks and re-encodes them with a valid `:authority`.
struct HeaderRewriter {
    decoder: loona_hpack::Decoder<'static>,
    pending: Option<PendingBlock>,
}

impl HeaderRewriter {
    fn new() -> Self {
        let mut decoder = loona_hpack::Decoder::new();
        decoder.set_max_allowed_table_size(MAX_HPACK_TABLE);
        Self {
            decoder,
            pending: None,
        }
    }

    fn in_block(&self) -> bool {
        self.pending.is_some()
    }

    /// Takes a HEADERS or CONTINUATION frame; returns the rewritten frames once the block
    /// is complete.
    fn push(&mut self, frame: &FrameHead, payload: Vec<u8>) -> io::Result<Option<Vec<u8>>> {
        match (frame.kind, &mut self.pending) {
            (HEADERS, None) => {
                let mut data = payload.as_slice();
                if frame.flags & PADDED != 0 {
                    let (&pad, rest) = data
                        .split_first()
                        .ok_or_else(|| protocol("padded HEADERS without a pad length"))?;
                    let keep = rest
                        .len()
                        .checked_sub(usize::from(pad))
                        .ok_or_else(|| protocol("HEADERS padding longer than the frame"))?;
                    data = &rest[..keep];
                }
                let mut priority = Vec::new();
                if frame.flags & PRIORITY != 0 {
                    if data.len() < 5 {
                        return Err(protocol("HEADERS priority fields cut short"));
                    }
                    priority = data[..5].to_vec();
                    data = &data[5..];
                }
                self.pending = Some(PendingBlock {
                    stream: frame.stream,
                    flags: frame.flags & (END_STREAM | PRIORITY),
                    priority,
                    block: data.to_vec(),
                });
            }
            (CONTINUATION, Some(p)) if p.stream == frame.stream => {
                if p.block.len() + payload.len() > MAX_HEADER_BLOCK {
                    return Err(protocol("header block too large"));
                }
                p.block.extend_from_slice(&payload);
            }
            _ => return Err(protocol("HEADERS or CONTINUATION out of sequence")),
        }
        if frame.flags & END_HEADERS == 0 {
            return Ok(None);
        }
        let p = self.pending.take().expect("a block is pending");
        let block = self.rewrite(&p.block)?;
        Ok(Some(frames(&p, &block)))
    }

    /// The block's fields, `:authority` fixed, as literals without indexing.
    fn rewrite(&mut self, block: &[u8]) -> io::Result<Vec<u8>> {
        let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut list_size = 0usize;
        self.decoder
            .decode_with_cb(block, |name, value| {
                // RFC 9113 §6.5.2: name, value and 32 bytes per field.
                list_size += name.len() + value.len() + 32;
                if list_size <= MAX_HEADER_BLOCK {
                    fields.push((name.into_owned(), value.into_owned()));
                }
            })
            .map_err(|e| protocol(format!("undecodable header block: {e}")))?;
        if list_size > MAX_HEADER_BLOCK {
            return Err(protocol("header list too large"));
        }
        let mut out = Vec::with_capacity(block.len() + 64);
        for (name, value) in &mut fields {
            if name == b":authority" && !is_valid_authority(value) {
                *value = LOCALHOST.to_vec();
            }
            literal(&mut out, name, value);
        }
        Ok(out)
    }
}

/// True when h2 accepts `value` as `:authority`.
fn is_valid_authority(value: &[u8]) -> bool {
    tonic::codegen::http::uri::Authority::try_from(value).is_ok()
}

/// Appends a "literal header field without indexing, new name" (RFC 7541 §6.2.2), strings
/// not Huffman-coded: the server's decoder table is never used.
fn literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0x00);
    for s in [name, value] {
        loona_hpack::encoder::encode_integer_into(s.len(), 7, 0x00, out).expect("writing to a Vec");
        out.extend_from_slice(s);
    }
}

/// A HEADERS frame (and CONTINUATION frames) carrying `block` for `p`'s stream.
fn frames(p: &PendingBlock, block: &[u8]) -> Vec<u8> {
    let first_room = MAX_FRAME - p.priority.len();
    let (first, mut rest) = block.split_at(block.len().min(first_room));
    let mut out = Vec::with_capacity(block.len() + 32);
    let last = rest.is_empty();
    FrameHead {
        len: p.priority.len() + first.len(),
        kind: HEADERS,
        flags: p.flags | if last { END_HEADERS } else { 0 },
        stream: p.stream,
    }
    .write(&mut out);
    out.extend_from_slice(&p.priority);
    out.extend_from_slice(first);
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(rest.len().min(MAX_FRAME));
        rest = tail;
        FrameHead {
            len: chunk.len(),
            kind: CONTINUATION,
            flags: if rest.is_empty() { END_HEADERS } else { 0 },
            stream: p.stream,
        }
        .write(&mut out);
        out.extend_from_slice(chunk);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        FrameHead {
            len: payload.len(),
            kind,
            flags,
            stream,
        }
        .write(&mut out);
        out.extend_from_slice(payload);
        out
    }

    /// Runs `forward_client` over `input`; returns what reached the server.
    async fn relayed(input: Vec<u8>) -> io::Result<Vec<u8>> {
        let (mut server, relay_out) = tokio::io::duplex(1 << 20);
        forward_client(input.as_slice(), relay_out).await?;
        let mut out = Vec::new();
        server.read_to_end(&mut out).await?;
        Ok(out)
    }

    /// Splits `bytes` (after the preface) into frames.
    fn parse_frames(mut bytes: &[u8]) -> Vec<(FrameHead, Vec<u8>)> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let head = FrameHead::parse(bytes[..9].try_into().unwrap());
            out.push((head, bytes[9..9 + head.len].to_vec()));
            bytes = &bytes[9 + head.len..];
        }
        out
    }

    fn request_headers(authority: &[u8]) -> Vec<(&'static [u8], Vec<u8>)> {
        vec![
            (b":method", b"POST".to_vec()),
            (b":scheme", b"http".to_vec()),
            (b":path", b"/cuzk.v1.ProvingEngine/GetStatus".to_vec()),
            (b":authority", authority.to_vec()),
            (b"te", b"trailers".to_vec()),
            (b"content-type", b"application/grpc".to_vec()),
        ]
    }

    #[tokio::test]
    async fn an_invalid_authority_becomes_localhost_and_the_rest_is_unchanged() {
        // The client's encoder indexes the fields, so the second request refers to its
        // dynamic table: the relay must decode with the client's table.
        let mut enc = loona_hpack::Encoder::new();
        let mut first = request_headers(b"%2Frun%2Ffilprove%2Ffilprove.sock");
        let h1 = enc.encode(first.iter().map(|(n, v)| (*n, v.as_slice())));
        first[2].1 = b"/cuzk.v1.ProvingEngine/Prove".to_vec();
        let h2 = enc.encode(first.iter().map(|(n, v)| (*n, v.as_slice())));
        let valid = request_headers(b"127.0.0.1:9820");
        let h3 = enc.encode(valid.iter().map(|(n, v)| (*n, v.as_slice())));
        let mut input = PREFACE.to_vec();
        input.extend(frame(0x4, 0, 0, &[0, 3, 0, 0, 0, 100])); // SETTINGS
        input.extend(frame(HEADERS, END_HEADERS, 1, &h1));
        input.extend(frame(0x0, END_STREAM, 1, b"\0\0\0\0\0")); // DATA
                                                                // The second block split over HEADERS (padded, with priority) and CONTINUATION.
        let (a, b) = h2.split_at(3);
        let mut padded = vec![2u8, 0, 0, 0, 1, 16];
        padded.extend_from_slice(a);
        padded.extend_from_slice(&[0, 0]);
        input.extend(frame(HEADERS, PADDED | PRIORITY | END_STREAM, 3, &padded));
        input.extend(frame(CONTINUATION, END_HEADERS, 3, b));
        input.extend(frame(HEADERS, END_HEADERS, 5, &h3));

        let out = relayed(input).await.unwrap();
        assert_eq!(&out[..24], PREFACE);
        let frames = parse_frames(&out[24..]);
        let kinds: Vec<u8> = frames.iter().map(|(h, _)| h.kind).collect();
        assert_eq!(kinds, [0x4, HEADERS, 0x0, HEADERS, HEADERS]);
        assert_eq!(frames[2].1, b"\0\0\0\0\0", "DATA unchanged");
        assert_eq!(frames[3].0.flags, PRIORITY | END_STREAM | END_HEADERS);
        assert_eq!(&frames[3].1[..5], &[0, 0, 0, 1, 16], "priority kept");
        let mut dec = loona_hpack::Decoder::new();
        let fields = |payload: &[u8], dec: &mut loona_hpack::Decoder| dec.decode(payload).unwrap();
        let got1 = fields(&frames[1].1, &mut dec);
        let got2 = fields(&frames[3].1[5..], &mut dec);
        let got3 = fields(&frames[4].1, &mut dec);
        let authority = |f: &[(Vec<u8>, Vec<u8>)]| {
            f.iter()
                .find(|(n, _)| n == b":authority")
                .unwrap()
                .1
                .clone()
        };
        assert_eq!(authority(&got1), b"localhost");
        assert_eq!(authority(&got2), b"localhost");
        assert_eq!(
            authority(&got3),
            b"127.0.0.1:9820",
            "a valid authority is kept"
        );
        assert_eq!(got2[2].1, b"/cuzk.v1.ProvingEngine/Prove");
        assert_eq!(got1.len(), 6);
        assert_eq!(
            got1[5],
            (b"content-type".to_vec(), b"application/grpc".to_vec())
        );
    }

    #[tokio::test]
    async fn a_large_block_is_split_into_continuation_frames() {
        let big = vec![b'x'; 40_000];
        let mut enc = loona_hpack::Encoder::new();
        let block = enc.encode([
            (&b":authority"[..], &b"/tmp/x.sock"[..]),
            (&b"x-big"[..], &big[..]),
        ]);
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, END_HEADERS, 1, &block));
        let out = relayed(input).await.unwrap();
        let frames = parse_frames(&out[24..]);
        assert!(frames.len() >= 3, "{} frames", frames.len());
        assert!(frames.iter().all(|(h, _)| h.len <= MAX_FRAME));
        assert_eq!(frames[0].0.flags & END_HEADERS, 0);
        assert_eq!(frames.last().unwrap().0.flags, END_HEADERS);
        let joined: Vec<u8> = frames.iter().flat_map(|(_, p)| p.clone()).collect();
        let got = loona_hpack::Decoder::new().decode(&joined).unwrap();
        assert_eq!(got[0].1, b"localhost");
        assert_eq!(got[1].1, big);
    }

    #[tokio::test]
    async fn broken_framing_closes_the_connection() {
        let mut enc = loona_hpack::Encoder::new();
        let block = enc.encode([(&b":authority"[..], &b"x"[..])]);
        // DATA inside a header block.
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, 0, 1, &block));
        input.extend(frame(0x0, 0, 1, b"data"));
        assert!(relayed(input).await.is_err());
        // CONTINUATION without HEADERS.
        let mut input = PREFACE.to_vec();
        input.extend(frame(CONTINUATION, END_HEADERS, 1, &block));
        assert!(relayed(input).await.is_err());
        // Undecodable block.
        let mut input = PREFACE.to_vec();
        input.extend(frame(
            HEADERS,
            END_HEADERS,
            1,
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        ));
        assert!(relayed(input).await.is_err());
        // Padding longer than the frame.
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, END_HEADERS | PADDED, 1, &[9, 0]));
        assert!(relayed(input).await.is_err());
        // Cut inside a frame.
        let mut input = PREFACE.to_vec();
        input.extend(&frame(0x0, 0, 1, b"data")[..11]);
        assert!(relayed(input).await.is_err());
        // A header block above the bound.
        let mut input = PREFACE.to_vec();
        input.extend(frame(HEADERS, 0, 1, &vec![0; MAX_FRAME]));
        for _ in 0..MAX_HEADER_BLOCK / MAX_FRAME {
            input.extend(frame(CONTINUATION, 0, 1, &vec![0; MAX_FRAME]));
        }
        assert!(relayed(input).await.is_err());
    }

    #[tokio::test]
    async fn not_http2_passes_through() {
        let input = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
        assert_eq!(relayed(input.clone()).await.unwrap(), input);
    }
}

//! The receive budget (docs/hardening.md, "Messages still being received"), against a real
//! daemon (CPU backend, 2 KiB fixtures): callers that announce large messages and send
//! them slowly hold at most the budget, those beyond it are refused at their length prefix
//! with RESOURCE_EXHAUSTED and a retry hint, a PoSt-sized message is still received while
//! they hold it, /metrics and /status show what they hold and how many were refused, and
//! connections beyond `intake.max_connections` are closed at once.

mod daemon_support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use daemon_support::*;
use filprove::client;
use filprove::server::config::ByteSize;
use filprove::server::convert::to_wire;
use filprove::server::intake::RETRY_PUSHBACK_KEY;
use filprove::server::{pb, Config};
use filprove_filecoin::ProofKind;
use http_body::{Body as HttpBody, Frame};
use prost::Message as _;
use tokio::sync::mpsc;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::{Bytes, Service as _};
use tonic::transport::Channel;

const MIB: usize = 1 << 20;
/// `server.max_message_bytes` of the test daemon.
const MAX_MESSAGE: usize = 4 * MIB;
/// A large message: with its 5-byte prefix exactly a quarter of the receive budget.
const LARGE: usize = MAX_MESSAGE - 5;
/// `intake.small_message_bytes` of the test daemon.
const SMALL: usize = MIB;

/// Receive budget 16 MiB, 25 % (4 MiB) reserved for messages up to 1 MiB: three large
/// messages fill what large ones may use.
fn receive_config(c: &mut Config) {
    c.server.max_message_bytes = MAX_MESSAGE;
    c.intake.max_receiving_bytes = ByteSize::Text("16MiB".into());
    c.intake.small_message_bytes = ByteSize::Text("1MiB".into());
    c.intake.small_message_reserved_percent = 25;
    c.intake.retry_after_secs = 2;
}

/// A request body fed chunk by chunk from the test.
struct ChunkBody(mpsc::UnboundedReceiver<Bytes>);

impl HttpBody for ChunkBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|b| Ok(Frame::data(b))))
    }
}

/// A call's gRPC status code, message and retry hint.
type Answer = (tonic::Code, String, Option<String>);

/// A SubmitProof call whose body the test sends piece by piece.
struct SlowCall {
    body: Option<mpsc::UnboundedSender<Bytes>>,
    answer: mpsc::UnboundedReceiver<(usize, Answer)>,
}

impl SlowCall {
    /// Opens the call on its own connection.
    async fn open(addr: &str) -> Self {
        let (tx, answer) = mpsc::unbounded_channel();
        Self {
            body: Some(Self::open_to(addr, 0, tx).await),
            answer,
        }
    }

    /// Opens a call on its own connection whose answer goes to `answers`, tagged `id`;
    /// returns its body's sender.
    async fn open_to(
        addr: &str,
        id: usize,
        answers: mpsc::UnboundedSender<(usize, Answer)>,
    ) -> mpsc::UnboundedSender<Bytes> {
        Self::open_on(client::channel(addr).await.unwrap(), id, answers)
    }

    /// [`SlowCall::open_to`] on an open connection.
    fn open_on(
        channel: Channel,
        id: usize,
        answers: mpsc::UnboundedSender<(usize, Answer)>,
    ) -> mpsc::UnboundedSender<Bytes> {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let _ = answers.send((id, answer(channel, rx).await));
        });
        tx
    }

    fn send(&self, bytes: &[u8]) {
        send(self.body.as_ref().unwrap(), bytes);
    }

    /// Ends the request body.
    fn finish(&mut self) {
        self.body = None;
    }

    /// The call's status code, message and retry hint; fails the test after 60 s.
    async fn status(mut self) -> Answer {
        next_answer(&mut self.answer).await.1
    }
}

fn send(body: &mpsc::UnboundedSender<Bytes>, bytes: &[u8]) {
    // The daemon may have answered (and reset the stream) already.
    let _ = body.send(Bytes::copy_from_slice(bytes));
}

/// The next answer; fails the test after 60 s without one.
async fn next_answer(answers: &mut mpsc::UnboundedReceiver<(usize, Answer)>) -> (usize, Answer) {
    tokio::time::timeout(Duration::from_secs(60), answers.recv())
        .await
        .expect("the daemon answered")
        .unwrap()
}

/// Sends the request and reads the gRPC status from the headers or the trailers.
async fn answer(mut channel: Channel, body: mpsc::UnboundedReceiver<Bytes>) -> Answer {
    let request = Request::builder()
        .method("POST")
        .uri("http://localhost/cuzk.v1.ProvingEngine/SubmitProof")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(tonic::body::Body::new(ChunkBody(body)))
        .unwrap();
    std::future::poll_fn(|cx| channel.poll_ready(cx))
        .await
        .unwrap();
    let response: Response<tonic::body::Body> = channel.call(request).await.unwrap();
    let (parts, mut body) = response.into_parts();
    let mut headers = parts.headers;
    if !headers.contains_key("grpc-status") {
        while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
        {
            if let Ok(trailers) = frame.unwrap().into_trailers() {
                headers.extend(trailers);
            }
        }
    }
    let text = |k: &str| headers.get(k).map(|v| v.to_str().unwrap().to_string());
    let code: i32 = text("grpc-status").expect("a grpc-status").parse().unwrap();
    let message = text("grpc-message").unwrap_or_default();
    let message = percent_decode(&message);
    (tonic::Code::from(code), message, text(RETRY_PUSHBACK_KEY))
}

/// grpc-message is percent-encoded.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The receive budget as /metrics shows it: held bytes, the budget, calls refused with a
/// small and with a large message.
async fn scraped_receive(http: SocketAddr) -> [f64; 4] {
    let (code, body) = tokio::task::spawn_blocking(move || http_get(http, "/metrics"))
        .await
        .unwrap();
    assert_eq!(code, 200, "{body}");
    let scraped = exposition::parse(&body);
    for (family, kind) in [
        ("filprove_receive_held_bytes", "gauge"),
        ("filprove_receive_limit_bytes", "gauge"),
        ("filprove_receive_refused_total", "counter"),
    ] {
        assert_eq!(scraped.types.get(family).map(String::as_str), Some(kind));
    }
    let value = |name: &str, size: Option<&str>| {
        let found: Vec<f64> = scraped
            .samples
            .iter()
            .filter(|s| s.name == name && s.labels.get("size").map(String::as_str) == size)
            .map(|s| s.value)
            .collect();
        assert_eq!(found.len(), 1, "{name} {size:?}: {body}");
        found[0]
    };
    [
        value("filprove_receive_held_bytes", None),
        value("filprove_receive_limit_bytes", None),
        value("filprove_receive_refused_total", Some("small")),
        value("filprove_receive_refused_total", Some("large")),
    ]
}

/// The `receive` object of /status.
async fn status_receive(http: SocketAddr) -> serde_json::Value {
    let (code, body) = tokio::task::spawn_blocking(move || http_get(http, "/status"))
        .await
        .unwrap();
    assert_eq!(code, 200, "{body}");
    serde_json::from_str::<serde_json::Value>(&body).unwrap()["receive"].clone()
}

/// A SubmitProof message of exactly `len` bytes (a PoRep whose C1 output is filler, so the
/// daemon refuses it once decoded) behind its 5-byte gRPC prefix.
fn framed_message(len: usize) -> Vec<u8> {
    let mut m = pb::SubmitProofRequest {
        request_id: "large".into(),
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        ..Default::default()
    };
    let mut filler = len - 64;
    loop {
        m.vanilla_proof = vec![b'x'; filler];
        let have = m.encoded_len();
        if have == len {
            break;
        }
        filler = filler + len - have;
    }
    let mut out = vec![0];
    out.extend_from_slice(&(len as u32).to_be_bytes());
    m.encode(&mut out).unwrap();
    out
}

/// Eight callers announce a large message each and send a little of it; the budget holds
/// three, the other five are refused at their prefix. While the three hold it, a message
/// just above the small-message size is refused too, and a WindowPoSt (a small message)
/// is received and accepted. /metrics and /status show the three messages' bytes held and
/// every refusal. Once the three have sent the rest, they are decoded and answered by the
/// service, their bytes are released, and a large message fits again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_large_senders_hold_at_most_the_budget_and_posts_still_get_in() {
    let d = TestDaemon::start(receive_config);
    let large = framed_message(LARGE);
    let (answers_tx, mut answers) = mpsc::unbounded_channel();
    let mut bodies = Vec::new();
    for id in 0..8 {
        let body = SlowCall::open_to(&d.unix_addr(), id, answers_tx.clone()).await;
        send(&body, &large[..256 << 10]);
        bodies.push(Some(body));
    }
    // The refused are answered at once; the held ones wait for the rest of their message.
    let mut refusals: u32 = 0;
    for _ in 0..5 {
        let (id, (code, message, retry)) = next_answer(&mut answers).await;
        assert_eq!(code, tonic::Code::ResourceExhausted, "{message}");
        assert!(message.starts_with("receive_busy:"), "{message}");
        assert!(message.contains("retry after 2 s"), "{message}");
        assert_eq!(retry.as_deref(), Some("2000"));
        bodies[id] = None;
        refusals += 1;
    }
    let held: Vec<_> = bodies.into_iter().flatten().collect();
    assert_eq!(held.len(), 3);

    // Above the small-message size: refused at its prefix.
    let over = SlowCall::open(&d.unix_addr()).await;
    over.send(&framed_message(SMALL + 1)[..5]);
    let (code, message, _) = over.status().await;
    assert_eq!(code, tonic::Code::ResourceExhausted, "{message}");
    assert!(message.starts_with("receive_busy:"), "{message}");
    refusals += 1;

    // A PoSt: received from the reserve, decoded, accepted by the intake.
    let window = request(ProofKind::WindowPoSt);
    let wire = to_wire(&window, "post-in-flood", pb::Priority::Normal);
    assert!(wire.encoded_len() <= SMALL);
    let mut c = client::connect(&d.unix_addr()).await.unwrap();
    c.submit_proof(wire).await.unwrap();
    assert!(
        answers.try_recv().is_err(),
        "a held call was answered early"
    );

    // Scraped while the three hold the budget: their whole announced messages, within
    // what large messages may use; every refusal counted, all of large messages.
    let budget = 16.0 * MIB as f64;
    let [held_bytes, limit, refused_small, refused_large] = scraped_receive(d.http).await;
    assert_eq!(held_bytes, 3.0 * MAX_MESSAGE as f64);
    assert!(
        held_bytes > 0.0 && held_bytes <= 0.75 * budget,
        "{held_bytes}"
    );
    assert_eq!(limit, budget);
    assert_eq!((refused_small, refused_large), (0.0, f64::from(refusals)));
    let status = status_receive(d.http).await;
    assert_eq!(status["held_bytes"], 3 * MAX_MESSAGE);
    assert_eq!(status["refused"]["large"], refusals);

    // The held messages complete: decoded, then refused by the service's validation.
    for h in held {
        send(&h, &large[256 << 10..]);
    }
    for _ in 0..3 {
        let (_, (code, message, _)) = next_answer(&mut answers).await;
        assert_eq!(code, tonic::Code::InvalidArgument, "{message}");
    }
    // Their bytes are released: a large message is received whole again.
    let mut again = SlowCall::open(&d.unix_addr()).await;
    again.send(&large);
    again.finish();
    let (code, message, _) = again.status().await;
    assert_eq!(code, tonic::Code::InvalidArgument, "{message}");
    let [held_bytes, _, refused_small, refused_large] = scraped_receive(d.http).await;
    assert_eq!(held_bytes, 0.0);
    assert_eq!((refused_small, refused_large), (0.0, f64::from(refusals)));
    // GetMetrics answers the same families.
    let text = c
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    let line = format!("filprove_receive_refused_total{{size=\"large\"}} {refusals}\n");
    assert!(text.contains(&line), "{text}");
    d.shutdown().unwrap();
}

/// With `intake.max_connections = 2`, a third connection to the TCP listener is closed as
/// soon as it is accepted, while the first two are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_are_closed_at_once() {
    let d = TestDaemon::start(|c| c.intake.max_connections = 2);
    let mut open = Vec::new();
    for _ in 0..2 {
        let mut c = client::connect(&d.tcp_addr()).await.unwrap();
        c.get_status(pb::GetStatusRequest {}).await.unwrap();
        open.push(c);
    }
    let tcp = d.tcp;
    let closed = tokio::task::spawn_blocking(move || {
        use std::io::Read as _;
        let mut s = std::net::TcpStream::connect(tcp).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut buf = [0u8; 64];
        // The daemon closes without a byte (an admitted connection would wait for the
        // HTTP/2 preface and time this read out).
        matches!(s.read(&mut buf), Ok(0))
            || matches!(s.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset)
    })
    .await
    .unwrap();
    assert!(closed, "the third connection was kept open");
    // The admitted connections still serve.
    for c in &mut open {
        c.get_status(pb::GetStatusRequest {}).await.unwrap();
    }
    d.shutdown().unwrap();
}

/// With `intake.max_streams_per_connection = 1`, a second call on a connection whose one
/// stream is taken by a call still sending waits for it to end; on another connection it
/// is answered at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_beyond_the_stream_limit_wait_for_a_free_stream() {
    let d = TestDaemon::start(|c| c.intake.max_streams_per_connection = 1);
    let channel = client::channel(&d.unix_addr()).await.unwrap();
    // One call answered on this connection first: the client then holds the daemon's
    // SETTINGS (its stream limit). Without it the client could open the second stream
    // below before it read them, and the daemon refuses a stream beyond the limit.
    let mut same = pb::proving_engine_client::ProvingEngineClient::new(channel.clone());
    same.get_status(pb::GetStatusRequest {}).await.unwrap();
    let (answers_tx, mut answers) = mpsc::unbounded_channel();
    let body = SlowCall::open_on(channel, 0, answers_tx);
    let message = framed_message(64 << 10);
    send(&body, &message[..1024]);
    // Another connection is not held up.
    let mut other = client::connect(&d.unix_addr()).await.unwrap();
    other.get_status(pb::GetStatusRequest {}).await.unwrap();
    let mut waiting = tokio::spawn(async move { same.get_status(pb::GetStatusRequest {}).await });
    // Answered at once without the limit; with it, not before the first call ends.
    let early = tokio::time::timeout(Duration::from_millis(500), &mut waiting).await;
    assert!(early.is_err(), "the second stream was opened: {early:?}");
    send(&body, &message[1024..]);
    drop(body);
    let (_, (code, message, _)) = next_answer(&mut answers).await;
    assert_eq!(code, tonic::Code::InvalidArgument, "{message}");
    tokio::time::timeout(Duration::from_secs(60), waiting)
        .await
        .expect("the second call ran once the first ended")
        .unwrap()
        .unwrap();
    d.shutdown().unwrap();
}

/// An edit of the test configuration.
type Tweak = dyn Fn(&mut Config);

/// The receive settings are checked when the configuration is validated.
#[test]
fn receive_settings_are_validated() {
    let dir = tempfile::tempdir().unwrap();
    let check = |tweak: &Tweak| {
        let mut c = test_config(dir.path());
        tweak(&mut c);
        c.validate()
    };
    check(&|_| {}).unwrap();
    check(&receive_config).unwrap();
    let cases: [(&Tweak, &str); 6] = [
        (
            &|c| c.intake.max_receiving_bytes = ByteSize::Text("300MiB".into()),
            "intake.max_receiving_bytes leaves",
        ),
        (
            &|c| c.intake.max_receiving_bytes = ByteSize::Text("auto".into()),
            "intake.max_receiving_bytes takes a size",
        ),
        (
            &|c| c.intake.small_message_bytes = ByteSize::Text("300MiB".into()),
            "intake.small_message_reserved_percent reserves",
        ),
        (
            &|c| c.intake.small_message_reserved_percent = 91,
            "at most 90",
        ),
        (
            &|c| c.intake.max_streams_per_connection = 0,
            "intake.max_streams_per_connection",
        ),
        (&|c| c.intake.max_connections = 0, "intake.max_connections"),
    ];
    for (tweak, expected) in cases {
        let e = check(tweak).unwrap_err();
        assert!(e.contains(expected), "{e}");
    }
    // Unknown keys are refused, known ones parse with their units.
    let parsed: Config = toml::from_str(
        "[intake]\nmax_receiving_bytes = \"2GiB\"\nsmall_message_bytes = \"32MiB\"\n\
         small_message_reserved_percent = 10\nmax_streams_per_connection = 64\n\
         max_connections = 8\n",
    )
    .unwrap();
    let l = parsed.intake.receive_limits(256 << 20).unwrap();
    assert_eq!(l.receiving_bytes, 2 << 30);
    assert_eq!(l.small_message_bytes, 32 << 20);
    assert!(toml::from_str::<Config>("[intake]\nmax_receive_bytes = 1\n").is_err());
}

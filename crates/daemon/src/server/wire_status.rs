//! Status codes of messages that do not decode.
//!
//! tonic answers a request body that is not a valid protobuf message (wrong wire type,
//! invalid UTF-8 in a string, truncated field, a malformed gRPC frame) with INTERNAL, which
//! reads as a daemon fault and invites a blind retry. It is the caller's input that is
//! wrong, so the daemon answers INVALID_ARGUMENT with the stable code `invalid_message`.

use tonic::body::Body;
use tonic::codegen::http::{HeaderMap, HeaderValue, Response};

/// gRPC status codes (as sent in the `grpc-status` header).
const GRPC_INTERNAL: &str = "13";
const GRPC_INVALID_ARGUMENT: &str = "3";

/// The starts of tonic's (percent-encoded) messages for undecodable requests: prost's
/// decode errors and the framing errors of tonic's decoder.
const DECODE_FAILURES: [&str; 3] = [
    "failed%20to%20decode%20Protobuf%20message",
    "protocol%20error",
    "Unexpected%20EOF%20decoding%20stream",
];

/// Whether `headers` carry tonic's INTERNAL status for a request that did not decode.
fn is_decode_failure(headers: &HeaderMap) -> bool {
    headers
        .get("grpc-status")
        .is_some_and(|v| v == GRPC_INTERNAL)
        && headers
            .get("grpc-message")
            .and_then(|m| m.to_str().ok())
            .is_some_and(|m| DECODE_FAILURES.iter().any(|p| m.starts_with(p)))
}

/// Rewrites tonic's INTERNAL answer to an undecodable request as INVALID_ARGUMENT
/// (`invalid_message: <tonic's message>`); every other response passes unchanged. Used as
/// a `MapResponseLayer` on the gRPC server (the status of a request that fails to decode is
/// in the response headers: tonic answers it trailers-only).
pub fn decode_failure_to_invalid_argument(mut r: Response<Body>) -> Response<Body> {
    let h = r.headers_mut();
    if is_decode_failure(h) {
        let msg = h
            .get("grpc-message")
            .and_then(|m| m.to_str().ok())
            .unwrap_or_default()
            .to_string();
        h.insert(
            "grpc-status",
            HeaderValue::from_static(GRPC_INVALID_ARGUMENT),
        );
        if let Ok(v) = HeaderValue::from_str(&format!("invalid_message:%20{msg}")) {
            h.insert("grpc-message", v);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: &'static str, message: &'static str) -> Response<Body> {
        let mut r = Response::new(Body::empty());
        r.headers_mut()
            .insert("grpc-status", HeaderValue::from_static(status));
        r.headers_mut()
            .insert("grpc-message", HeaderValue::from_static(message));
        r
    }

    #[test]
    fn only_decode_failures_are_rewritten() {
        let r = decode_failure_to_invalid_argument(response(
            "13",
            "failed%20to%20decode%20Protobuf%20message:%20invalid%20wire%20type",
        ));
        assert_eq!(r.headers()["grpc-status"], "3");
        assert_eq!(
            r.headers()["grpc-message"],
            "invalid_message:%20failed%20to%20decode%20Protobuf%20message:%20invalid%20wire%20type"
        );
        for (status, message) in [
            ("13", "internal:%20a%20real%20fault"),
            ("3", "failed%20to%20decode%20Protobuf%20message"),
            ("8", "message_too_large"),
        ] {
            let r = decode_failure_to_invalid_argument(response(status, message));
            assert_eq!(r.headers()["grpc-status"], status);
            assert_eq!(r.headers()["grpc-message"], message);
        }
    }
}

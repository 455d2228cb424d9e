//! Short, escaped excerpts of inputs for error messages and logs.
//!
//! An error that quotes its input whole turns a large request into an equally large log
//! line and gRPC status message, and a newline in it forges log lines. Everything that
//! puts caller-supplied text into a message goes through [`quote`] (bytes we hold) or
//! [`clip`] (a library's message, which may quote the input itself: serde's
//! `invalid type: string "..."` and `unknown field `...``, panics that print values).

/// Most bytes of an input an error message quotes.
pub const EXCERPT_BYTES: usize = 64;

/// Most bytes of one error message, after [`clip`].
pub const MAX_MESSAGE_BYTES: usize = 512;

/// `bytes` as a quoted, escaped excerpt of at most [`EXCERPT_BYTES`] input bytes (printable
/// ASCII kept, everything else `\xNN` or `\n`-style), followed by the total length when the
/// input was longer: `"abc..." (8388608 bytes)`.
pub fn quote(bytes: &[u8]) -> String {
    let cut = bytes.len().min(EXCERPT_BYTES);
    let mut out = String::with_capacity(cut * 2 + 24);
    out.push('"');
    for b in &bytes[..cut] {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            _ => out.extend(std::ascii::escape_default(*b).map(char::from)),
        }
    }
    out.push('"');
    if cut < bytes.len() {
        out.push_str(&format!("... ({} bytes)", bytes.len()));
    }
    out
}

/// [`quote`] of a string.
pub fn quote_str(s: &str) -> String {
    quote(s.as_bytes())
}

/// A message that may contain input, made safe for a log line or a gRPC status: every run
/// quoted with `"` or `` ` `` is cut to [`EXCERPT_BYTES`] (serde and anyhow quote the
/// offending value), control characters are escaped (no forged log lines), and the whole is
/// cut to [`MAX_MESSAGE_BYTES`] at a character boundary.
pub fn clip(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MAX_MESSAGE_BYTES) + 32);
    // The quote character of the run being copied, and the bytes of it seen so far.
    let mut open: Option<(char, usize)> = None;
    let mut skipped = 0usize;
    let mut chars = message.chars();
    let push = |out: &mut String, c: char| {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    };
    while let Some(c) = chars.next() {
        if out.len() >= MAX_MESSAGE_BYTES {
            out.push_str(&format!("... ({} bytes)", message.len()));
            return out;
        }
        match open {
            Some((q, _)) if c == q => {
                if skipped > 0 {
                    out.push_str(&format!("...({skipped} more bytes)"));
                    skipped = 0;
                }
                open = None;
                out.push(c);
            }
            Some((q, n)) => {
                // A backslash escapes the next character (Debug-quoted strings).
                let escaped = if c == '\\' { chars.next() } else { None };
                let len = c.len_utf8() + escaped.map_or(0, char::len_utf8);
                if n >= EXCERPT_BYTES {
                    skipped += len;
                } else {
                    push(&mut out, c);
                    if let Some(e) = escaped {
                        push(&mut out, e);
                    }
                }
                open = Some((q, n + len));
            }
            None => {
                if c == '"' || c == '`' {
                    open = Some((c, 0));
                }
                push(&mut out, c);
            }
        }
    }
    if skipped > 0 {
        out.push_str(&format!("...({skipped} more bytes)"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_cuts_and_escapes() {
        assert_eq!(quote(b"ab\n\"c"), r#""ab\n\"c""#);
        let big = vec![b'x'; 8 << 20];
        let q = quote(&big);
        assert!(q.len() < 100, "{q}");
        assert!(q.ends_with("... (8388608 bytes)"), "{q}");
        assert_eq!(quote(&[0xff, 0]), r#""\xff\x00""#);
    }

    #[test]
    fn clip_shortens_quoted_input_and_escapes_newlines() {
        let value = "A".repeat(20 << 20);
        let serde_like = format!("invalid type: string \"{value}\", expected u64 at line 1");
        let c = clip(&serde_like);
        assert!(c.len() < 200, "{} bytes", c.len());
        assert!(c.starts_with("invalid type: string \"AAAA"), "{c}");
        assert!(c.ends_with("\", expected u64 at line 1"), "{c}");
        let unknown = format!("unknown field `{value}`, expected one of `kind`");
        let c = clip(&unknown);
        assert!(c.contains("expected one of `kind`"), "{c}");
        assert!(c.len() < 200);
        let forged = clip("bad id\nINFO forged line");
        assert!(!forged.contains('\n'), "{forged}");
        let long = "word ".repeat(1 << 20);
        let c = clip(&long);
        assert!(c.len() <= MAX_MESSAGE_BYTES + 32, "{}", c.len());
        assert_eq!(clip("short message"), "short message");
        let escaped = r#"invalid type: string "a\"b", expected u64"#;
        assert_eq!(clip(escaped), escaped);
        // Multi-byte characters are never split.
        let c = clip(&"é".repeat(1000));
        assert!(c.len() <= MAX_MESSAGE_BYTES + 32);
    }
}

//! Incremental server-sent-events parsing (the WHATWG `text/event-stream` rules).
//!
//! [`SseParser`] is pure: bytes in, events out, no I/O and no clock. It accepts its input cut
//! anywhere — mid-line, between `\r` and `\n`, inside a multi-byte UTF-8 character — because it
//! only ever splits on the ASCII bytes `\r` and `\n` and decodes UTF-8 once per whole event.

/// The largest event (all its `data:` lines together) accepted before the stream is declared
/// malformed. Protects memory against a server that never ends a line.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event. `data` is its `data:` lines joined with `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the server named the event.
    pub event: Option<String>,
    pub data: String,
}

/// Why a byte stream is not a valid event stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("an event is not valid UTF-8")]
    InvalidUtf8,
    #[error("an event is larger than {limit} bytes")]
    TooLarge { limit: usize },
}

/// An incremental event-stream parser. Feed it with [`SseParser::push`]; call
/// [`SseParser::finish`] when the byte stream ends.
#[derive(Debug, Default)]
pub struct SseParser {
    /// The current line, when a chunk ended before its terminator.
    line: Vec<u8>,
    /// The current event's data lines, joined with `\n`.
    data: Vec<u8>,
    has_data: bool,
    event: Option<String>,
    /// The previous chunk ended with `\r`: a leading `\n` in the next one belongs to it.
    skip_lf: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `bytes`, appending every event they complete to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut rest = bytes;
        if self.skip_lf {
            self.skip_lf = false;
            if let Some((b'\n', tail)) = rest.split_first() {
                rest = tail;
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (head, tail) = rest.split_at(pos);
            if self.line.is_empty() {
                self.line_done(head, out)?;
            } else {
                self.line.extend_from_slice(head);
                let line = std::mem::take(&mut self.line);
                let result = self.line_done(&line, out);
                self.line = line;
                self.line.clear();
                result?;
            }
            let terminator = tail[0];
            rest = &tail[1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
        }
        if !rest.is_empty() {
            if self.line.len() + rest.len() + self.data.len() > MAX_EVENT_BYTES {
                return Err(SseError::TooLarge { limit: MAX_EVENT_BYTES });
            }
            self.line.extend_from_slice(rest);
        }
        Ok(())
    }

    /// The byte stream ended. A last line without its terminator, and an event without its
    /// closing blank line, are accepted: some servers end with `data: [DONE]\n` and close.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        self.skip_lf = false;
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, out)?;
        }
        self.dispatch(out)
    }

    /// Whether bytes are buffered that have not yet made an event.
    pub fn has_pending(&self) -> bool {
        !self.line.is_empty() || self.has_data
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            return self.dispatch(out);
        }
        if line[0] == b':' {
            return Ok(()); // a comment, e.g. a keep-alive
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT_BYTES {
                    return Err(SseError::TooLarge { limit: MAX_EVENT_BYTES });
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                let name = std::str::from_utf8(value).map_err(|_| SseError::InvalidUtf8)?;
                self.event = Some(name.to_string());
            }
            _ => {} // `id`, `retry` and unknown fields mean nothing to a chat stream
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let event = self.event.take();
        if !self.has_data {
            return Ok(());
        }
        self.has_data = false;
        let data =
            String::from_utf8(std::mem::take(&mut self.data)).map_err(|_| SseError::InvalidUtf8)?;
        out.push(SseEvent { event, data });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in(pieces: &[&[u8]]) -> Result<Vec<SseEvent>, SseError> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for piece in pieces {
            parser.push(piece, &mut out)?;
        }
        parser.finish(&mut out)?;
        Ok(out)
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    const TRANSCRIPT: &str = ": keep-alive\r\n\r\nevent: delta\r\ndata: {\"t\":\"h\u{e9}llo \u{1F30D}\"}\r\n\r\n\
        data:no-space\n\ndata: first\ndata:  second\n\nid: 7\nretry: 10\ndata\n\n\
        data: cr only\r\rdata: [DONE]\n\n";

    fn expected() -> Vec<SseEvent> {
        let plain = |d: &str| SseEvent { event: None, data: d.to_string() };
        vec![
            SseEvent {
                event: Some("delta".into()),
                data: "{\"t\":\"h\u{e9}llo \u{1F30D}\"}".into(),
            },
            plain("no-space"),
            plain("first\n second"),
            plain(""),
            plain("cr only"),
            plain("[DONE]"),
        ]
    }

    #[test]
    fn parses_a_whole_transcript() {
        assert_eq!(parse_in(&[TRANSCRIPT.as_bytes()]).unwrap(), expected());
    }

    #[test]
    fn every_split_position_gives_the_same_events() {
        let bytes = TRANSCRIPT.as_bytes();
        for at in 0..=bytes.len() {
            let (a, b) = bytes.split_at(at);
            assert_eq!(parse_in(&[a, b]).unwrap(), expected(), "split at byte {at}");
        }
        let single: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(parse_in(&single).unwrap(), expected(), "one byte at a time");
    }

    #[test]
    fn a_missing_final_blank_line_or_terminator_is_accepted_at_the_end() {
        assert_eq!(data(&parse_in(&[b"data: [DONE]\n"]).unwrap()), ["[DONE]"]);
        assert_eq!(data(&parse_in(&[b"data: [DONE]"]).unwrap()), ["[DONE]"]);
        assert_eq!(data(&parse_in(&[b"data: x\r"]).unwrap()), ["x"]);
    }

    #[test]
    fn blank_lines_and_comments_alone_make_no_event() {
        assert!(parse_in(&[b"\n\n\r\n: ping\n\n:\n\nevent: nothing\n\n"]).unwrap().is_empty());
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        assert_eq!(parse_in(&[b"data: \xff\xfe\n\n"]), Err(SseError::InvalidUtf8));
    }

    #[test]
    fn an_endless_line_is_refused_before_it_eats_memory() {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        let block = vec![b'a'; 1024 * 1024];
        let mut result = parser.push(b"data: ", &mut out);
        for _ in 0..=16 {
            result = result.and_then(|()| parser.push(&block, &mut out));
        }
        assert_eq!(result, Err(SseError::TooLarge { limit: MAX_EVENT_BYTES }));
    }

    #[test]
    fn pending_bytes_are_reported() {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        parser.push(b"data: {\"a\"", &mut out).unwrap();
        assert!(parser.has_pending());
        parser.push(b":1}\n\n", &mut out).unwrap();
        assert!(!parser.has_pending());
        assert_eq!(data(&out), ["{\"a\":1}"]);
    }
}

//! Reading one streamed answer, whatever the vendor: bytes from the socket → a [`Decoder`] →
//! chat events, under the request's deadlines.
//!
//! A vendor supplies a pure [`Assembler`] (payload text in, [`ChatEvent`]s out); the framing is
//! either server-sent events ([`SseDecoder`], OpenAI and Anthropic) or one JSON object per line
//! ([`LineDecoder`], Ollama). [`chat_stream`] wraps it all in the [`ChatStream`] a provider
//! returns: an error found after some events is yielded once they are, and nothing follows it.

use std::collections::VecDeque;
use std::future::Future;

use aria_api::{ChatEvent, ChatStream, ProviderError};
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;

use crate::http::{Clock, broken};
use crate::sse::{SseError, SseEvent, SseParser};

/// Turns one payload (an SSE event's data, or one NDJSON line) into events. Pure.
pub trait Assembler: Send + 'static {
    /// One payload; `event` is the SSE event name when the server gave one.
    fn push(
        &mut self,
        event: Option<&str>,
        data: &str,
        out: &mut Vec<ChatEvent>,
    ) -> Result<(), ProviderError>;
    /// The byte stream ended: emit what is pending, or say the answer was cut off.
    fn finish(&mut self, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError>;
    /// Whether the answer is complete; later input is not read.
    fn is_done(&self) -> bool;
}

/// Bytes → events: framing plus an [`Assembler`].
pub(crate) trait Decoder: Send + 'static {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<ChatEvent>) -> Result<(), ProviderError>;
    fn end(&mut self, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError>;
    fn is_done(&self) -> bool;
}

/// Server-sent events. With `whole_json`, the body is one JSON object (a server that ignored
/// `stream: true`) and is handed to the assembler whole at the end.
pub(crate) struct SseDecoder<A> {
    parser: SseParser,
    sse: Vec<SseEvent>,
    assembler: A,
    whole_json: Option<Vec<u8>>,
}

impl<A: Assembler> SseDecoder<A> {
    pub(crate) fn new(assembler: A, whole_json: bool) -> Self {
        SseDecoder {
            parser: SseParser::new(),
            sse: Vec::new(),
            assembler,
            whole_json: whole_json.then(Vec::new),
        }
    }

    fn drain(&mut self, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        for event in self.sse.drain(..) {
            self.assembler.push(event.event.as_deref(), &event.data, out)?;
            if self.assembler.is_done() {
                break;
            }
        }
        self.sse.clear();
        Ok(())
    }
}

fn sse_error(err: SseError) -> ProviderError {
    ProviderError::MalformedStream { message: err.to_string() }
}

impl<A: Assembler> Decoder for SseDecoder<A> {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        if let Some(whole) = &mut self.whole_json {
            whole.extend_from_slice(bytes);
            return Ok(());
        }
        self.parser.push(bytes, &mut self.sse).map_err(sse_error)?;
        self.drain(out)
    }

    fn end(&mut self, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        if let Some(whole) = self.whole_json.take() {
            let text = String::from_utf8_lossy(&whole);
            self.assembler.push(None, &text, out)?;
            return self.assembler.finish(out);
        }
        self.parser.finish(&mut self.sse).map_err(sse_error)?;
        self.drain(out)?;
        self.assembler.finish(out)
    }

    fn is_done(&self) -> bool {
        self.assembler.is_done()
    }
}

/// The largest NDJSON line accepted before the stream is declared malformed.
pub(crate) const MAX_LINE_BYTES: usize = crate::sse::MAX_EVENT_BYTES;

/// Newline-delimited JSON: one payload per line, blank lines skipped.
pub(crate) struct LineDecoder<A> {
    line: Vec<u8>,
    assembler: A,
}

impl<A: Assembler> LineDecoder<A> {
    pub(crate) fn new(assembler: A) -> Self {
        LineDecoder { line: Vec::new(), assembler }
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        let text = std::str::from_utf8(line).map_err(|_| ProviderError::MalformedStream {
            message: "a line of the answer is not valid UTF-8".into(),
        })?;
        let text = text.trim();
        if text.is_empty() || self.assembler.is_done() {
            return Ok(());
        }
        self.assembler.push(None, text, out)
    }
}

impl<A: Assembler> Decoder for LineDecoder<A> {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        let mut rest = bytes;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            let (head, tail) = rest.split_at(pos);
            if self.line.is_empty() {
                self.line_done(head, out)?;
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(head);
                self.line_done(&line, out)?;
                line.clear();
                self.line = line;
            }
            rest = &tail[1..];
        }
        if self.line.len() + rest.len() > MAX_LINE_BYTES {
            return Err(ProviderError::MalformedStream {
                message: format!("a line of the answer is longer than {MAX_LINE_BYTES} bytes"),
            });
        }
        self.line.extend_from_slice(rest);
        Ok(())
    }

    fn end(&mut self, out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
        let line = std::mem::take(&mut self.line);
        self.line_done(&line, out)?;
        self.assembler.finish(out)
    }

    fn is_done(&self) -> bool {
        self.assembler.is_done()
    }
}

/// Reads one streamed answer under its deadlines.
pub(crate) struct BodyReader<D> {
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    clock: Clock,
    got_body: bool,
    decoder: D,
    pending: VecDeque<ChatEvent>,
    /// An error found after some events: yielded once they are.
    failed: Option<ProviderError>,
    ended: bool,
}

impl<D: Decoder> BodyReader<D> {
    pub(crate) fn new(response: reqwest::Response, clock: Clock, decoder: D) -> Box<Self> {
        Box::new(BodyReader {
            body: response.bytes_stream().boxed(),
            clock,
            got_body: false,
            decoder,
            pending: VecDeque::new(),
            failed: None,
            ended: false,
        })
    }

    async fn next_event(&mut self) -> Option<Result<ChatEvent, ProviderError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            if let Some(err) = self.failed.take() {
                self.ended = true;
                return Some(Err(err));
            }
            if self.ended {
                return None;
            }
            let mut out = Vec::new();
            let step = match self.read().await {
                Ok(Some(bytes)) => {
                    let fed = self.decoder.feed(&bytes, &mut out);
                    if self.decoder.is_done() {
                        // The end marker: stop even if the server keeps the connection open.
                        self.ended = true;
                    }
                    fed
                }
                Ok(None) => {
                    self.ended = true;
                    self.decoder.end(&mut out)
                }
                Err(err) => Err(err),
            };
            self.pending.extend(out);
            if let Err(err) = step {
                self.failed = Some(err);
            }
        }
    }

    async fn read(&mut self) -> Result<Option<Bytes>, ProviderError> {
        let (deadline, after) = self.clock.deadline(self.got_body);
        match tokio::time::timeout_at(deadline, self.body.next()).await {
            Err(_) => Err(ProviderError::Timeout { after }),
            Ok(None) => Ok(None),
            Ok(Some(Err(err))) => Err(broken(&err)),
            Ok(Some(Ok(bytes))) => {
                self.got_body |= !bytes.is_empty();
                Ok(Some(bytes))
            }
        }
    }
}

enum Phase<F, D> {
    Start(F),
    Reading(Box<BodyReader<D>>),
    Done,
}

/// The stream of a call: `open` sends the request and checks the status; then the body is read.
pub(crate) fn chat_stream<F, D>(open: F) -> ChatStream
where
    F: Future<Output = Result<Box<BodyReader<D>>, ProviderError>> + Send + 'static,
    D: Decoder,
{
    let phase: Phase<std::pin::Pin<Box<F>>, D> = Phase::Start(Box::pin(open));
    Box::pin(futures::stream::unfold(phase, |phase| async move {
        let mut reader = match phase {
            Phase::Start(open) => match open.await {
                Ok(reader) => reader,
                Err(err) => return Some((Err(err), Phase::Done)),
            },
            Phase::Reading(reader) => reader,
            Phase::Done => return None,
        };
        match reader.next_event().await {
            Some(Ok(event)) => Some((Ok(event), Phase::Reading(reader))),
            Some(Err(err)) => Some((Err(err), Phase::Done)),
            None => None,
        }
    }))
}

/// A stream holding just one error.
pub(crate) fn failed(err: ProviderError) -> ChatStream {
    Box::pin(futures::stream::once(async { Err(err) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Echoes each payload as text; done at "END".
    #[derive(Default)]
    struct Echo {
        done: bool,
        events: Vec<Option<String>>,
    }

    impl Assembler for Echo {
        fn push(
            &mut self,
            event: Option<&str>,
            data: &str,
            out: &mut Vec<ChatEvent>,
        ) -> Result<(), ProviderError> {
            self.events.push(event.map(str::to_string));
            if data == "END" {
                self.done = true;
            } else {
                out.push(ChatEvent::TextDelta { text: data.to_string() });
            }
            Ok(())
        }
        fn finish(&mut self, _out: &mut Vec<ChatEvent>) -> Result<(), ProviderError> {
            if self.done {
                Ok(())
            } else {
                Err(ProviderError::MalformedStream { message: "cut".into() })
            }
        }
        fn is_done(&self) -> bool {
            self.done
        }
    }

    fn texts(out: &[ChatEvent]) -> Vec<String> {
        out.iter()
            .map(|e| match e {
                ChatEvent::TextDelta { text } => text.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn lines_are_split_anywhere_and_blank_lines_skipped() {
        let input = b"{\"a\":1}\n\n{\"b\":\"\xc3\xa9\"}\r\nEND\n";
        for at in 0..=input.len() {
            let mut decoder = LineDecoder::new(Echo::default());
            let mut out = Vec::new();
            let (a, b) = input.split_at(at);
            decoder.feed(a, &mut out).unwrap();
            decoder.feed(b, &mut out).unwrap();
            decoder.end(&mut out).unwrap();
            assert_eq!(texts(&out), ["{\"a\":1}", "{\"b\":\"é\"}"], "split at {at}");
            assert!(decoder.is_done());
        }
    }

    #[test]
    fn a_last_line_without_newline_counts_and_a_cut_answer_is_an_error() {
        let mut decoder = LineDecoder::new(Echo::default());
        let mut out = Vec::new();
        decoder.feed(b"x\nEND", &mut out).unwrap();
        decoder.end(&mut out).unwrap();
        assert_eq!(texts(&out), ["x"]);
        let mut cut = LineDecoder::new(Echo::default());
        cut.feed(b"x\n{\"partial", &mut out).unwrap();
        assert_eq!(cut.end(&mut out).unwrap_err().kind(), "malformed_stream");
    }

    #[test]
    fn sse_event_names_reach_the_assembler_and_nothing_is_read_after_the_end() {
        let mut decoder = SseDecoder::new(Echo::default(), false);
        let mut out = Vec::new();
        decoder.feed(b"event: a\ndata: one\n\ndata: END\n\ndata: after\n\n", &mut out).unwrap();
        assert_eq!(texts(&out), ["one"]);
        assert_eq!(decoder.assembler.events, [Some("a".to_string()), None]);
    }
}

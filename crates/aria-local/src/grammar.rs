//! A character-level matcher for one tool call, `{"name": <tool>, "arguments": {...}}`, whose
//! arguments follow the tool's JSON Schema. Constrained decoding asks it which tokens may come
//! next; whatever the model prefers among those is what gets generated, so the output always
//! parses and always has the schema's shape.
//!
//! Supported schema features: `type` (object, string, integer, number, boolean, null, array,
//! and lists of types), `properties`, `required`, `additionalProperties: false` (objects only get
//! the declared keys anyway), `items`, `enum`, `const`, `anyOf`/`oneOf` (the branch is chosen by
//! the first character), and of a string's `pattern` the literal text after a leading `^`
//! (`"^--- "`: the string must start so; the rest of the pattern is not enforced). Anything
//! else is treated as "any JSON value". The output is compact
//! JSON with one space after `:` and `,`, keys in any order, no duplicates.

use std::sync::Arc;

use serde_json::Value;

/// Longest string value the matcher lets the model write.
const MAX_STRING_CHARS: usize = 2048;
/// Most digits in a number (keeps integers exact in f64 and generation finite).
const MAX_DIGITS: u8 = 15;
/// Most digits in an exponent (keeps numbers finite in f64).
const MAX_EXP_DIGITS: u8 = 2;
/// Deepest nesting of free-form values.
const MAX_DEPTH: u8 = 4;
/// Most entries in an array or a free-form object.
const MAX_ITEMS: u16 = 32;

/// A JSON Schema reduced to what the matcher enforces.
#[derive(Debug)]
pub enum Schema {
    Any,
    /// A string, starting with this text when there is one (ASCII, nothing JSON escapes).
    Str(Option<Arc<str>>),
    Num {
        integer: bool,
    },
    /// Exact JSON texts (enum, const, booleans, null).
    Lits(Arc<[String]>),
    Obj(Arc<ObjSchema>),
    Arr(Arc<Schema>),
    Union(Vec<Arc<Schema>>),
}

#[derive(Debug)]
pub struct ObjSchema {
    /// JSON-escaped key text (without quotes) and the value's schema.
    props: Vec<(String, Arc<Schema>)>,
    required: u64,
    /// No declared properties: any keys, any values.
    free: bool,
}

impl Schema {
    /// Reduces a JSON Schema document.
    pub fn from_json(v: &Value) -> Arc<Schema> {
        Arc::new(Self::build(v, 0))
    }

    fn build(v: &Value, depth: u8) -> Schema {
        let Some(obj) = v.as_object() else { return Schema::Any };
        if depth > 8 {
            return Schema::Any;
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array)
            && !values.is_empty()
        {
            return Schema::Lits(values.iter().map(Value::to_string).collect());
        }
        if let Some(c) = obj.get("const") {
            return Schema::Lits(Arc::from(vec![c.to_string()]));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = obj.get(key).and_then(Value::as_array) {
                let branches: Vec<_> =
                    branches.iter().map(|b| Arc::new(Self::build(b, depth + 1))).collect();
                if !branches.is_empty() {
                    return Schema::Union(branches);
                }
            }
        }
        match obj.get("type") {
            Some(Value::String(t)) => Self::of_type(t, obj, depth),
            Some(Value::Array(types)) => Schema::Union(
                types
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|t| Arc::new(Self::of_type(t, obj, depth)))
                    .collect(),
            ),
            _ if obj.contains_key("properties") => Self::of_type("object", obj, depth),
            _ => Schema::Any,
        }
    }

    fn of_type(t: &str, obj: &serde_json::Map<String, Value>, depth: u8) -> Schema {
        match t {
            "string" => Schema::Str(
                obj.get("pattern").and_then(Value::as_str).and_then(literal_prefix).map(Arc::from),
            ),
            "integer" => Schema::Num { integer: true },
            "number" => Schema::Num { integer: false },
            "boolean" => Schema::Lits(Arc::from(vec!["true".to_owned(), "false".to_owned()])),
            "null" => Schema::Lits(Arc::from(vec!["null".to_owned()])),
            "array" => Schema::Arr(Arc::new(
                obj.get("items").map_or(Schema::Any, |i| Self::build(i, depth + 1)),
            )),
            "object" => {
                let required: Vec<&str> = obj
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut props = Vec::new();
                let mut mask = 0u64;
                if let Some(p) = obj.get("properties").and_then(Value::as_object) {
                    for (i, (name, schema)) in p.iter().take(64).enumerate() {
                        if required.contains(&name.as_str()) {
                            mask |= 1 << i;
                        }
                        let key = Value::String(name.clone()).to_string();
                        let key = key[1..key.len() - 1].to_owned();
                        props.push((key, Arc::new(Self::build(schema, depth + 1))));
                    }
                }
                let closed = obj.get("additionalProperties") == Some(&Value::Bool(false));
                let free = props.is_empty() && !closed;
                Schema::Obj(Arc::new(ObjSchema { props, required: mask, free }))
            }
            _ => Schema::Any,
        }
    }
}

/// The literal text a regular expression anchored with `^` starts with, up to its first
/// special character (none, or not anchored: `None`). Only printable ASCII that JSON writes
/// as is, so the matcher can compare it character by character.
fn literal_prefix(pattern: &str) -> Option<String> {
    let body = pattern.strip_prefix('^')?;
    let literal: String = body
        .chars()
        .take_while(|c| c.is_ascii_graphic() || *c == ' ')
        .take_while(|c| !"\\.^$|?*+()[]{}\"".contains(*c))
        .collect();
    // A quantifier applies to the character before it, which is then not certain.
    let literal = match body[literal.len()..].chars().next() {
        Some('?' | '*' | '{') => literal[..literal.len().saturating_sub(1)].to_owned(),
        _ => literal,
    };
    (!literal.is_empty()).then_some(literal)
}

/// What the matcher needs to know about the tools on offer.
#[derive(Debug)]
pub struct ToolGrammar {
    /// Tool names as JSON string literals (with quotes).
    names: Arc<[String]>,
    schemas: Vec<Arc<Schema>>,
}

impl ToolGrammar {
    pub fn new<'a>(tools: impl IntoIterator<Item = (&'a str, &'a Value)>) -> Self {
        let mut names = Vec::new();
        let mut schemas = Vec::new();
        for (name, params) in tools {
            names.push(Value::String(name.to_owned()).to_string());
            schemas.push(Schema::from_json(params));
        }
        ToolGrammar { names: names.into(), schemas }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Esc {
    None,
    Backslash,
    Unicode(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumSt {
    Start,
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ObjSt {
    Start,
    AfterOpen,
    AfterComma,
    KeyQuote,
    Key(String),
    AfterKey,
    AfterColon,
    AfterColonSpace,
    AfterValue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArrSt {
    Start,
    AfterOpen,
    AfterValue,
    AfterComma,
    AfterCommaSpace,
}

/// One open value of the call being matched. A string's `prefix` is the text it must start
/// with (see [`Schema::Str`]).
#[derive(Debug, Clone)]
enum Frame {
    Value { schema: Arc<Schema>, depth: u8 },
    Fixed { text: &'static str, pos: usize },
    Str { open: bool, len: usize, esc: Esc, prefix: Option<Arc<str>> },
    Lit { options: Arc<[String]>, typed: String },
    Num { st: NumSt, integer: bool, digits: u8 },
    Obj { schema: Arc<ObjSchema>, used: u64, count: u16, cur: usize, st: ObjSt, depth: u8 },
    Arr { item: Arc<Schema>, st: ArrSt, count: u16, depth: u8 },
}

enum Step {
    /// Consumed; the frame goes on.
    Ok,
    /// Consumed; the frame is complete.
    Done,
    Reject,
    /// Not consumed: push this frame and give it the character.
    Push(Frame),
    /// Not consumed: replace this frame with that one and give it the character.
    Replace(Frame),
    /// Not consumed, and the frame is complete: pop it and give the parent the character.
    PopRetry,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TopSt {
    Lead(u8),
    Head,
    Name,
    Middle,
    Args,
    Close,
    Finished,
}

/// The state of one tool call being written. Cheap to clone (the checker clones it per token).
#[derive(Debug, Clone)]
pub struct Matcher {
    grammar: Arc<ToolGrammar>,
    stack: Vec<Frame>,
    top: TopSt,
    consumed: usize,
    tool: Option<usize>,
    args: (usize, usize),
}

impl Matcher {
    pub fn new(grammar: Arc<ToolGrammar>) -> Self {
        Matcher {
            grammar,
            stack: Vec::new(),
            top: TopSt::Lead(0),
            consumed: 0,
            tool: None,
            args: (0, 0),
        }
    }

    /// Whether the whole call has been written.
    pub fn is_done(&self) -> bool {
        self.top == TopSt::Finished
    }

    /// The chosen tool's index, once its name is complete.
    pub fn tool(&self) -> Option<usize> {
        self.tool
    }

    /// Character range of the arguments object in everything fed so far (valid once done).
    pub fn args_chars(&self) -> (usize, usize) {
        self.args
    }

    /// Whether `s` can come next.
    pub fn accepts(&self, s: &str) -> bool {
        let mut probe = self.clone();
        !s.is_empty() && s.chars().all(|c| probe.feed(c))
    }

    /// Feeds one character; false (and an unspecified state) when it is not allowed.
    pub fn feed(&mut self, c: char) -> bool {
        loop {
            let Some(frame) = self.stack.last_mut() else {
                return self.feed_top(c);
            };
            match step(frame, c) {
                Step::Ok => break,
                Step::Reject => return false,
                Step::Done => {
                    self.consumed += 1;
                    self.pop_done(true);
                    return true;
                }
                Step::Push(f) => self.stack.push(f),
                Step::Replace(f) => *frame = f,
                Step::PopRetry => self.pop_done(false),
            }
        }
        self.consumed += 1;
        true
    }

    /// The shortest text that finishes the call from here (used when the token budget runs out).
    pub fn completion(&self) -> String {
        let mut m = self.clone();
        let mut out = String::new();
        for _ in 0..100_000 {
            if m.is_done() {
                break;
            }
            match m.stack.last().map(preferred) {
                None => {
                    let c = if matches!(m.top, TopSt::Lead(_)) { '{' } else { break };
                    if !m.feed(c) {
                        break;
                    }
                    out.push(c);
                }
                Some(Some(c)) => {
                    if !m.feed(c) {
                        break;
                    }
                    out.push(c);
                }
                Some(None) => m.pop_done(false),
            }
        }
        out
    }

    fn feed_top(&mut self, c: char) -> bool {
        match self.top {
            TopSt::Lead(n) if (c == ' ' || c == '\n') && n < 2 => {
                self.top = TopSt::Lead(n + 1);
                self.consumed += 1;
                true
            }
            TopSt::Lead(_) if c == '{' => {
                self.top = TopSt::Head;
                self.stack.push(Frame::Fixed { text: "{\"name\": ", pos: 0 });
                self.feed(c)
            }
            _ => false,
        }
    }

    /// A frame finished; `consumed_current` says whether it ate the character being fed.
    fn pop_done(&mut self, consumed_current: bool) {
        let Some(done) = self.stack.pop() else { return };
        if let Some(parent) = self.stack.last_mut() {
            match parent {
                Frame::Obj { st, .. } => *st = ObjSt::AfterValue,
                Frame::Arr { st, .. } => *st = ArrSt::AfterValue,
                _ => {}
            }
            return;
        }
        let _ = consumed_current;
        match self.top {
            TopSt::Head => {
                self.top = TopSt::Name;
                let options = self.grammar.names.clone();
                self.stack.push(Frame::Lit { options, typed: String::new() });
            }
            TopSt::Name => {
                if let Frame::Lit { options, typed } = &done {
                    self.tool = options.iter().position(|o| o == typed);
                }
                self.top = TopSt::Middle;
                self.stack.push(Frame::Fixed { text: ", \"arguments\": ", pos: 0 });
            }
            TopSt::Middle => {
                self.top = TopSt::Args;
                let schema = match self.tool.and_then(|t| self.grammar.schemas.get(t)) {
                    Some(s) => s.clone(),
                    None => Arc::new(Schema::Any),
                };
                // Arguments are always an object, whatever the schema's top says.
                let schema = match &*schema {
                    Schema::Obj(_) => schema,
                    _ => Arc::new(Schema::Obj(Arc::new(ObjSchema {
                        props: Vec::new(),
                        required: 0,
                        free: true,
                    }))),
                };
                self.args.0 = self.consumed;
                self.stack.push(Frame::Value { schema, depth: 0 });
            }
            TopSt::Args => {
                self.args.1 = self.consumed;
                self.top = TopSt::Close;
                self.stack.push(Frame::Fixed { text: "}", pos: 0 });
            }
            TopSt::Close => self.top = TopSt::Finished,
            TopSt::Lead(_) | TopSt::Finished => {}
        }
    }
}

fn start_frame(schema: &Arc<Schema>, depth: u8, c: char) -> Option<Frame> {
    let nested = depth < MAX_DEPTH;
    match &**schema {
        Schema::Str(prefix) if c == '"' => {
            Some(Frame::Str { open: false, len: 0, esc: Esc::None, prefix: prefix.clone() })
        }
        Schema::Num { integer } if c == '-' || c.is_ascii_digit() => {
            Some(Frame::Num { st: NumSt::Start, integer: *integer, digits: 0 })
        }
        Schema::Lits(options) if options.iter().any(|o| o.starts_with(c)) => {
            Some(Frame::Lit { options: options.clone(), typed: String::new() })
        }
        Schema::Obj(o) if c == '{' => Some(Frame::Obj {
            schema: o.clone(),
            used: 0,
            count: 0,
            cur: 0,
            st: ObjSt::Start,
            depth,
        }),
        Schema::Arr(item) if c == '[' => {
            Some(Frame::Arr { item: item.clone(), st: ArrSt::Start, count: 0, depth })
        }
        Schema::Union(branches) => branches.iter().find_map(|b| start_frame(b, depth, c)),
        Schema::Any => {
            let free = || Arc::new(ObjSchema { props: Vec::new(), required: 0, free: true });
            match c {
                '"' => Some(Frame::Str { open: false, len: 0, esc: Esc::None, prefix: None }),
                '-' | '0'..='9' => Some(Frame::Num { st: NumSt::Start, integer: false, digits: 0 }),
                't' | 'f' | 'n' => Some(Frame::Lit {
                    options: Arc::from(vec!["true".into(), "false".into(), "null".into()]),
                    typed: String::new(),
                }),
                '{' if nested => Some(Frame::Obj {
                    schema: free(),
                    used: 0,
                    count: 0,
                    cur: 0,
                    st: ObjSt::Start,
                    depth,
                }),
                '[' if nested => Some(Frame::Arr {
                    item: Arc::new(Schema::Any),
                    st: ArrSt::Start,
                    count: 0,
                    depth,
                }),
                _ => None,
            }
        }
        _ => None,
    }
}

fn step(frame: &mut Frame, c: char) -> Step {
    match frame {
        Frame::Value { schema, depth } => match start_frame(schema, *depth, c) {
            Some(f) => Step::Replace(f),
            None => Step::Reject,
        },
        Frame::Fixed { text, pos } => {
            if text[*pos..].starts_with(c) {
                *pos += c.len_utf8();
                if *pos == text.len() { Step::Done } else { Step::Ok }
            } else {
                Step::Reject
            }
        }
        Frame::Str { open, len, esc, prefix } => {
            if let (true, Some(next)) = (*open, prefix_char(prefix.as_deref(), *len)) {
                // Still inside the required start: only its next character.
                if c != next {
                    return Step::Reject;
                }
                *len += 1;
                Step::Ok
            } else if *open {
                step_str(len, esc, c)
            } else if c == '"' {
                *open = true;
                Step::Ok
            } else {
                Step::Reject
            }
        }
        Frame::Lit { options, typed } => {
            let exact = options.iter().any(|o| o == typed);
            typed.push(c);
            if options.iter().any(|o| o.starts_with(typed.as_str())) {
                let longer =
                    options.iter().any(|o| o.len() > typed.len() && o.starts_with(typed.as_str()));
                if longer { Step::Ok } else { Step::Done }
            } else {
                typed.pop();
                if exact { Step::PopRetry } else { Step::Reject }
            }
        }
        Frame::Num { st, integer, digits } => step_num(st, *integer, digits, c),
        Frame::Obj { schema, used, count, cur, st, depth } => {
            step_obj(schema, used, count, cur, st, *depth, c)
        }
        Frame::Arr { item, st, count, depth } => {
            let value = || Frame::Value { schema: item.clone(), depth: *depth + 1 };
            match (*st, c) {
                (ArrSt::Start, '[') => {
                    *st = ArrSt::AfterOpen;
                    Step::Ok
                }
                (ArrSt::AfterOpen | ArrSt::AfterValue, ']') => Step::Done,
                (ArrSt::AfterValue, ',') if *count < MAX_ITEMS => {
                    *st = ArrSt::AfterComma;
                    Step::Ok
                }
                (ArrSt::AfterComma, ' ') => {
                    *st = ArrSt::AfterCommaSpace;
                    Step::Ok
                }
                (ArrSt::AfterOpen | ArrSt::AfterComma | ArrSt::AfterCommaSpace, _) => {
                    *st = ArrSt::AfterValue;
                    *count += 1;
                    Step::Push(value())
                }
                _ => Step::Reject,
            }
        }
    }
}

/// Character `at` of a string's required start, while there is one.
fn prefix_char(prefix: Option<&str>, at: usize) -> Option<char> {
    prefix.and_then(|p| p.as_bytes().get(at)).map(|b| char::from(*b))
}

fn step_str(len: &mut usize, esc: &mut Esc, c: char) -> Step {
    match *esc {
        Esc::Backslash => {
            if "\"\\/bfnrt".contains(c) {
                *esc = Esc::None;
                Step::Ok
            } else if c == 'u' {
                *esc = Esc::Unicode(0);
                Step::Ok
            } else {
                Step::Reject
            }
        }
        Esc::Unicode(n) => {
            if c.is_ascii_hexdigit() {
                *esc = if n == 3 { Esc::None } else { Esc::Unicode(n + 1) };
                Step::Ok
            } else {
                Step::Reject
            }
        }
        Esc::None => match c {
            '"' => Step::Done,
            _ if *len >= MAX_STRING_CHARS => Step::Reject,
            '\\' => {
                *len += 1;
                *esc = Esc::Backslash;
                Step::Ok
            }
            c if (c as u32) < 0x20 => Step::Reject,
            _ => {
                *len += 1;
                Step::Ok
            }
        },
    }
}

fn step_num(st: &mut NumSt, integer: bool, digits: &mut u8, c: char) -> Step {
    let digit = c.is_ascii_digit();
    let complete = matches!(st, NumSt::Zero | NumSt::Int | NumSt::Frac | NumSt::ExpDigits);
    let next = match (*st, c) {
        (NumSt::Start, '-') => Some(NumSt::Minus),
        (NumSt::Start | NumSt::Minus, '0') => Some(NumSt::Zero),
        (NumSt::Start | NumSt::Minus, _) if digit => Some(NumSt::Int),
        (NumSt::Int, _) if digit && *digits < MAX_DIGITS => Some(NumSt::Int),
        (NumSt::Zero | NumSt::Int, '.') if !integer => Some(NumSt::Dot),
        (NumSt::Dot | NumSt::Frac, _) if digit && *digits < MAX_DIGITS => Some(NumSt::Frac),
        (NumSt::Zero | NumSt::Int | NumSt::Frac, 'e' | 'E') if !integer => Some(NumSt::Exp),
        (NumSt::Exp, '+' | '-') => Some(NumSt::ExpSign),
        (NumSt::Exp | NumSt::ExpSign, _) if digit => Some(NumSt::ExpDigits),
        (NumSt::ExpDigits, _) if digit && *digits < MAX_EXP_DIGITS => Some(NumSt::ExpDigits),
        _ => None,
    };
    match next {
        Some(n) => {
            if n == NumSt::Exp {
                *digits = 0;
            }
            if digit {
                *digits += 1;
            }
            *st = n;
            Step::Ok
        }
        None if complete => Step::PopRetry,
        None => Step::Reject,
    }
}

fn required_met(schema: &ObjSchema, used: u64) -> bool {
    schema.required & !used == 0
}

fn has_unused(schema: &ObjSchema, used: u64, count: u16) -> bool {
    if schema.free {
        return count < MAX_ITEMS;
    }
    (0..schema.props.len()).any(|i| used & (1 << i) == 0)
}

fn step_obj(
    schema: &Arc<ObjSchema>,
    used: &mut u64,
    count: &mut u16,
    cur: &mut usize,
    st: &mut ObjSt,
    depth: u8,
    c: char,
) -> Step {
    let next = match (&mut *st, c) {
        (ObjSt::Start, '{') => ObjSt::AfterOpen,
        (ObjSt::AfterOpen | ObjSt::AfterValue, '}') if required_met(schema, *used) => {
            return Step::Done;
        }
        (ObjSt::AfterOpen | ObjSt::AfterComma | ObjSt::KeyQuote, '"')
            if has_unused(schema, *used, *count) =>
        {
            ObjSt::Key(String::new())
        }
        (ObjSt::AfterComma, ' ') => ObjSt::KeyQuote,
        (ObjSt::Key(typed), '"') if schema.free && !typed.is_empty() => {
            *count += 1;
            ObjSt::AfterKey
        }
        (ObjSt::Key(typed), '"') if !schema.free => {
            match schema.props.iter().position(|(k, _)| k == typed) {
                Some(i) if *used & (1 << i) == 0 => {
                    *used |= 1 << i;
                    *cur = i;
                    *count += 1;
                    ObjSt::AfterKey
                }
                _ => return Step::Reject,
            }
        }
        (ObjSt::Key(typed), c) => {
            let ok = if schema.free {
                typed.len() < 40 && c != '\\' && c != '"' && (c as u32) >= 0x20
            } else {
                typed.push(c);
                let ok = schema
                    .props
                    .iter()
                    .enumerate()
                    .any(|(i, (k, _))| *used & (1 << i) == 0 && k.starts_with(typed.as_str()));
                typed.pop();
                ok
            };
            if !ok {
                return Step::Reject;
            }
            typed.push(c);
            return Step::Ok;
        }
        (ObjSt::AfterKey, ':') => ObjSt::AfterColon,
        (ObjSt::AfterColon, ' ') => ObjSt::AfterColonSpace,
        (ObjSt::AfterColon | ObjSt::AfterColonSpace, _) => {
            let schema = if schema.free {
                Arc::new(Schema::Any)
            } else {
                schema.props.get(*cur).map_or_else(|| Arc::new(Schema::Any), |p| p.1.clone())
            };
            *st = ObjSt::AfterValue;
            return Step::Push(Frame::Value { schema, depth: depth + 1 });
        }
        (ObjSt::AfterValue, ',') if has_unused(schema, *used, *count) => ObjSt::AfterComma,
        _ => return Step::Reject,
    };
    *st = next;
    Step::Ok
}

/// The character that heads most directly towards finishing `frame`; `None` when the frame is
/// already complete and should be popped.
fn preferred(frame: &Frame) -> Option<char> {
    match frame {
        Frame::Value { schema, .. } => Some(start_char(schema)),
        Frame::Fixed { text, pos } => text[*pos..].chars().next(),
        Frame::Str { open: false, .. } => Some('"'),
        Frame::Str { len, prefix: Some(p), .. } if prefix_char(Some(p), *len).is_some() => {
            prefix_char(Some(p), *len)
        }
        Frame::Str { esc, .. } => Some(match esc {
            Esc::None => '"',
            Esc::Backslash => 'n',
            Esc::Unicode(_) => '0',
        }),
        Frame::Lit { options, typed } => {
            if options.iter().any(|o| o == typed) {
                return None;
            }
            let best =
                options.iter().filter(|o| o.starts_with(typed.as_str())).min_by_key(|o| o.len())?;
            best[typed.len()..].chars().next()
        }
        Frame::Num { st, .. } => match st {
            NumSt::Zero | NumSt::Int | NumSt::Frac | NumSt::ExpDigits => None,
            _ => Some('0'),
        },
        Frame::Obj { schema, used, st, cur, .. } => Some(match st {
            ObjSt::Start => '{',
            ObjSt::AfterOpen | ObjSt::AfterValue if required_met(schema, *used) => '}',
            ObjSt::AfterOpen => '"',
            ObjSt::AfterValue => ',',
            ObjSt::AfterComma | ObjSt::KeyQuote => '"',
            ObjSt::Key(typed) if schema.free => {
                if typed.is_empty() {
                    'k'
                } else {
                    '"'
                }
            }
            ObjSt::Key(typed) => {
                let target = schema
                    .props
                    .iter()
                    .enumerate()
                    .filter(|(i, (k, _))| *used & (1 << i) == 0 && k.starts_with(typed.as_str()))
                    .min_by_key(|(i, (k, _))| (schema.required & (1 << i) == 0, k.len()))
                    .map(|(_, (k, _))| k)?;
                target[typed.len()..].chars().next().unwrap_or('"')
            }
            ObjSt::AfterKey => ':',
            ObjSt::AfterColon | ObjSt::AfterColonSpace => {
                let schema = schema.props.get(*cur).map(|p| p.1.clone());
                schema.map_or('n', |s| start_char(&s))
            }
        }),
        Frame::Arr { st, item, .. } => Some(match st {
            ArrSt::Start => '[',
            ArrSt::AfterOpen | ArrSt::AfterValue => ']',
            ArrSt::AfterComma | ArrSt::AfterCommaSpace => start_char(item),
        }),
    }
}

fn start_char(schema: &Schema) -> char {
    match schema {
        Schema::Any => 'n',
        Schema::Str(_) => '"',
        Schema::Num { .. } => '0',
        Schema::Lits(options) => {
            options.iter().min_by_key(|o| o.len()).and_then(|o| o.chars().next()).unwrap_or('n')
        }
        Schema::Obj(_) => '{',
        Schema::Arr(_) => '[',
        Schema::Union(branches) => branches.first().map_or('n', |b| start_char(b)),
    }
}

#[cfg(test)]
mod tests;

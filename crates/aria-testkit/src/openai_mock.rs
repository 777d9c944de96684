//! Loopback mock of the OpenAI chat-completions API (being written).

mod support;

mod chat;
mod embed;
mod granite;
mod pull;
mod pull_parts;
mod qwen;
mod tokenizer;
mod tools;

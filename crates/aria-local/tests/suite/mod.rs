mod support;

mod chat;
mod embed;
mod pull;
mod tokenizer;
mod tools;

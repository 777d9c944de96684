//! Guards: the checks between what the model asks for and what actually happens.
//!
//! - [`path`]: confinement of file paths to the configured roots, and sensitive-file refusal;
//!   `protected` lists the files that configure ARIA or git, which are never written.
//! - [`read`]: reading an approved path as text, with the check/use gap narrowed.
//! - [`secrets`]: the secret redactor used on logs, audit payloads and model input, with
//!   [`entropy`] for high-entropy tokens.
//! - [`ssrf`]: which URLs and addresses `web_fetch` may reach (no SSRF).
//! - [`injection`]: instructions aimed at the model inside tool output, found and neutralised.

pub(crate) mod decode;
pub mod described;
pub mod entropy;
pub mod injection;
pub mod injection_model;
pub(crate) mod injection_rules;
pub(crate) mod invisible;
pub(crate) mod lexical;
pub mod path;
pub(crate) mod protected;
pub mod read;
pub(crate) mod secret_rules;
pub mod secrets;
pub mod sensitive;
pub mod ssrf;
pub(crate) mod walk;

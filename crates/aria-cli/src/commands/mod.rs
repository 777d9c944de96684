//! One module per command group.

pub mod agents;
pub mod audit;
pub mod chat;
pub mod check;
pub mod doctor;
pub mod inspect;
pub mod logs;
pub mod mcp;
pub mod memories;
pub mod model;
pub mod models;
pub mod plugins;
pub mod rollback;
pub mod run;
pub mod schedule;
pub mod search;
pub mod serve;
pub mod setup;
pub mod slash;
pub mod snapshots;
pub mod telegram;
pub mod tokens;
pub mod traces;

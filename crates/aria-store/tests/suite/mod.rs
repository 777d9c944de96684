mod audit;
mod concurrency;
mod helpers;
mod journal;
mod memory;
mod open;
mod props;
mod tamper;

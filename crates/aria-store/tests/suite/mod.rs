mod audit;
mod concurrency;
mod helpers;
mod journal;
mod open;
mod props;
mod tamper;

//! End-to-end tests of the `aria` binary against loopback mock model servers.
mod suite;

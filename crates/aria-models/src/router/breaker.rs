//! A circuit breaker for one route: closed (calls flow), open (calls are refused at once, so a
//! dead provider costs no waiting), half-open (one probe is let through after a cooldown; its
//! success closes the breaker, its failure opens it again).

use std::time::{Duration, Instant};

/// When a breaker opens and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerPolicy {
    /// Consecutive failed attempts that open the breaker.
    pub failures_to_open: u32,
    /// How long an open breaker refuses calls before it lets a probe through.
    pub cooldown: Duration,
}

impl Default for BreakerPolicy {
    fn default() -> Self {
        BreakerPolicy { failures_to_open: 3, cooldown: Duration::from_secs(30) }
    }
}

/// A breaker's state, as shown in logs and `aria models test`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    Closed { failures: u32 },
    Open { until: Instant },
    HalfOpen,
}

#[derive(Debug)]
pub(crate) struct Breaker {
    policy: BreakerPolicy,
    state: BreakerState,
    /// A half-open probe is in flight: other calls are refused until it ends.
    probing: bool,
}

impl Breaker {
    pub(crate) fn new(policy: BreakerPolicy) -> Self {
        Breaker { policy, state: BreakerState::Closed { failures: 0 }, probing: false }
    }

    pub(crate) fn state(&self) -> BreakerState {
        self.state
    }

    /// Whether a call may go out now; `Err` holds how long until the next probe.
    pub(crate) fn admit(&mut self, now: Instant) -> Result<(), Duration> {
        match self.state {
            BreakerState::Closed { .. } => Ok(()),
            BreakerState::Open { until } if now >= until => {
                self.state = BreakerState::HalfOpen;
                self.probing = true;
                Ok(())
            }
            BreakerState::Open { until } => Err(until - now),
            BreakerState::HalfOpen if self.probing => Err(Duration::ZERO),
            BreakerState::HalfOpen => {
                self.probing = true;
                Ok(())
            }
        }
    }

    pub(crate) fn success(&mut self) {
        self.state = BreakerState::Closed { failures: 0 };
        self.probing = false;
    }

    pub(crate) fn failure(&mut self, now: Instant) {
        self.probing = false;
        self.state = match self.state {
            BreakerState::Closed { failures } if failures + 1 < self.policy.failures_to_open => {
                BreakerState::Closed { failures: failures + 1 }
            }
            _ => BreakerState::Open { until: now + self.policy.cooldown },
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_repeated_failures_probes_after_the_cooldown_and_closes_on_success() {
        let t0 = Instant::now();
        let mut b =
            Breaker::new(BreakerPolicy { failures_to_open: 3, cooldown: Duration::from_secs(30) });
        for _ in 0..2 {
            b.failure(t0);
            assert!(b.admit(t0).is_ok());
        }
        b.failure(t0);
        assert_eq!(b.admit(t0 + Duration::from_secs(10)), Err(Duration::from_secs(20)));
        let later = t0 + Duration::from_secs(30);
        assert!(b.admit(later).is_ok(), "one probe after the cooldown");
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(b.admit(later).is_err(), "only one probe at a time");
        b.failure(later);
        assert!(matches!(b.state(), BreakerState::Open { .. }), "a failed probe opens it again");
        let again = later + Duration::from_secs(30);
        assert!(b.admit(again).is_ok());
        b.success();
        assert_eq!(b.state(), BreakerState::Closed { failures: 0 });
        assert!(b.admit(again).is_ok());
    }

    #[test]
    fn a_success_resets_the_count() {
        let t0 = Instant::now();
        let mut b = Breaker::new(BreakerPolicy::default());
        b.failure(t0);
        b.failure(t0);
        b.success();
        b.failure(t0);
        b.failure(t0);
        assert!(b.admit(t0).is_ok());
    }
}

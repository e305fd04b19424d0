//! The rate limit: at most 100 requests per second per team, across every
//! endpoint, exact under concurrency.
//!
//! The limiter is a sliding-window log: per team, the times of its last `limit` accepted
//! requests, in a ring. A request is accepted when the oldest of those is at least one
//! window old, so **no window of one second, wherever it starts, ever holds more than
//! `limit` accepted requests**. A token bucket or GCRA with a burst of 100 would let 200
//! through in the second that starts with a full bucket; a per-second counter lets 200
//! through across a boundary. The log is a ring of `limit` times (8 bytes each, in
//! nanoseconds since the limiter was made): a request reads and overwrites one slot, the
//! oldest, under one short lock. A refused request is not recorded, so it costs the team
//! nothing, and its `Retry-After` is the time until the oldest entry leaves the window.

use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

/// Per-team sliding-window logs.
#[derive(Debug)]
pub struct RateLimiter {
    limit: usize,
    clock: Clock,
    /// One log per team number; it grows when teams are added while the server runs.
    teams: RwLock<Vec<Mutex<Ring>>>,
}

/// A limiter's time: nanoseconds since the limiter was made, so that a log entry takes 8
/// bytes where an `Instant` takes 16 (a `u64` of nanoseconds lasts 584 years).
#[derive(Debug, Clone, Copy)]
struct Clock {
    epoch: Instant,
    window: u64,
}

impl Clock {
    fn new(window: Duration) -> Clock {
        Clock {
            epoch: Instant::now(),
            window: u64::try_from(window.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// `at` in the limiter's time (an instant before the limiter was made is its start).
    fn at(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }
}

/// The most entries a ring reserves at once: a limit of millions (or `u32::MAX`, meant as
/// "no limit") must not reserve gigabytes on a client's first request.
const RING_RESERVED: usize = 128;

/// The times of one team's (or client's) last accepted requests, at most `limit` of them:
/// filled in time order, then a ring in which `next` is the oldest entry, the one the next
/// accepted request overwrites. Its storage is allocated on the first request: `limit`
/// entries, or [`RING_RESERVED`] when `limit` is larger (then it grows as it fills).
#[derive(Debug, Default)]
struct Ring {
    times: Vec<u64>,
    next: usize,
}

impl Ring {
    /// Records a request at `now` unless `limit` were accepted in the `window` before it
    /// (both in the limiter's time).
    fn admit(&mut self, now: u64, limit: usize, window: u64) -> Result<(), Refused> {
        if self.times.len() < limit {
            if self.times.capacity() == 0 {
                self.times.reserve_exact(limit.min(RING_RESERVED));
            }
            self.times.push(now);
            return Ok(());
        }
        let Some(oldest) = self.times.get_mut(self.next) else {
            // `limit` is 0: nothing is ever accepted.
            return Err(Refused {
                retry_after: Duration::from_nanos(window),
            });
        };
        let age = now.saturating_sub(*oldest);
        if age < window {
            return Err(Refused {
                retry_after: Duration::from_nanos(window - age),
            });
        }
        *oldest = now;
        self.next = (self.next + 1) % self.times.len();
        Ok(())
    }

    /// The time of the latest accepted request.
    fn last(&self) -> Option<u64> {
        match self.next {
            0 => self.times.last().copied(),
            next => self.times.get(next - 1).copied(),
        }
    }
}

/// A refused request: how long until one more would be accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// Time until the oldest accepted request leaves the window.
    pub retry_after: Duration,
}

impl Refused {
    /// `Retry-After` in whole seconds, rounded up (at least 1: HTTP counts seconds).
    pub fn retry_after_secs(&self) -> u64 {
        let secs = self.retry_after.as_secs() + u64::from(self.retry_after.subsec_nanos() > 0);
        secs.max(1)
    }
}

impl RateLimiter {
    /// A limiter of `limit` requests per `window` for `teams` teams (numbered from 0).
    pub fn new(teams: usize, limit: usize, window: Duration) -> RateLimiter {
        RateLimiter {
            limit,
            clock: Clock::new(window),
            teams: RwLock::new((0..teams).map(|_| Mutex::new(Ring::default())).collect()),
        }
    }

    /// Makes room for teams numbered up to `teams - 1` (teams added while the server
    /// runs); the logs of the teams there are stay as they are.
    pub fn grow(&self, teams: usize) {
        let mut logs = self.teams.write().unwrap_or_else(|e| e.into_inner());
        while logs.len() < teams {
            logs.push(Mutex::new(Ring::default()));
        }
    }

    /// The service's limit, the same for every plan: 100 requests per second.
    pub fn per_spec(teams: usize) -> RateLimiter {
        RateLimiter::new(teams, 100, Duration::from_secs(1))
    }

    /// Accepts (and records) or refuses a request of team `team` now. The clock is read
    /// under the team's lock, so the log stays in time order however threads interleave.
    ///
    /// # Errors
    ///
    /// [`Refused`] when the team has had `limit` accepted requests in the last window.
    pub fn check(&self, team: usize) -> Result<(), Refused> {
        self.check_with(team, Instant::now)
    }

    /// [`RateLimiter::check`] at the time `now` gives (read under the lock; for tests).
    ///
    /// # Errors
    ///
    /// As [`RateLimiter::check`].
    pub fn check_with(&self, team: usize, now: impl FnOnce() -> Instant) -> Result<(), Refused> {
        let teams = self.teams.read().unwrap_or_else(|e| e.into_inner());
        let Some(ring) = teams.get(team) else {
            return Ok(());
        };
        let mut ring = ring.lock().unwrap_or_else(|e| e.into_inner());
        ring.admit(self.clock.at(now()), self.limit, self.clock.window)
    }
}

/// Sliding-window logs per client, for the requests made without a key where a surface
/// allows them (`/v2`): the same rule as [`RateLimiter`]'s, per client. A client is an
/// IPv4 address or an IPv6 /64 (one host's usual share; an IPv4-mapped IPv6 address is its
/// IPv4 address). Clients idle for a window are forgotten when the map has doubled since
/// the last sweep, so memory follows the clients active in the last window. At
/// [`AddressLimiter::MAX_CLIENTS`] clients a new client is refused, and the map is swept
/// again once a window has passed since its last sweep, so a client waits at most about a
/// window for the room that idle ones leave.
#[derive(Debug)]
pub struct AddressLimiter {
    limit: usize,
    window: Duration,
    clock: Clock,
    max_clients: usize,
    logs: Mutex<Logs>,
}

#[derive(Debug)]
struct Logs {
    by_client: std::collections::HashMap<std::net::IpAddr, Ring>,
    /// The map's size at which it is next swept.
    sweep_at: usize,
    /// When it was last swept (the limiter's time).
    swept: Option<u64>,
}

impl AddressLimiter {
    /// The smallest map that is swept.
    pub const SWEEP_AT_LEAST: usize = 4096;
    /// The most clients remembered at once.
    pub const MAX_CLIENTS: usize = 1 << 20;

    /// A limiter of `limit` requests per `window` per client.
    pub fn new(limit: usize, window: Duration) -> AddressLimiter {
        AddressLimiter::with_max_clients(limit, window, Self::MAX_CLIENTS)
    }

    /// [`AddressLimiter::new`] remembering at most `max_clients` clients.
    fn with_max_clients(limit: usize, window: Duration, max_clients: usize) -> AddressLimiter {
        AddressLimiter {
            limit,
            window,
            clock: Clock::new(window),
            max_clients,
            logs: Mutex::new(Logs {
                by_client: std::collections::HashMap::new(),
                sweep_at: Self::SWEEP_AT_LEAST,
                swept: None,
            }),
        }
    }

    /// The client an address belongs to.
    fn client(address: std::net::IpAddr) -> std::net::IpAddr {
        use std::net::{IpAddr, Ipv6Addr};
        match address {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let mut segments = v6.segments();
                    segments[4..].fill(0);
                    IpAddr::V6(Ipv6Addr::from(segments))
                }
            },
            v4 => v4,
        }
    }

    /// Accepts (and records) or refuses a request from `address`, the clock read under
    /// the lock.
    ///
    /// # Errors
    ///
    /// [`Refused`] when the client has had `limit` accepted requests in the last window.
    pub fn check(&self, address: std::net::IpAddr) -> Result<(), Refused> {
        self.check_with(address, Instant::now)
    }

    /// [`AddressLimiter::check`] at the time `now` gives (for tests).
    ///
    /// # Errors
    ///
    /// As [`AddressLimiter::check`].
    pub fn check_with(
        &self,
        address: std::net::IpAddr,
        now: impl FnOnce() -> Instant,
    ) -> Result<(), Refused> {
        let client = Self::client(address);
        let mut logs = self.logs.lock().unwrap_or_else(|e| e.into_inner());
        let now = self.clock.at(now());
        let window = self.clock.window;
        if !logs.by_client.contains_key(&client) {
            let full = logs.by_client.len() >= self.max_clients;
            // When full, the map may have reached its size without doubling since the last
            // sweep: it is swept once a window has passed since then instead.
            let due = logs.by_client.len() >= logs.sweep_at
                || (full && logs.swept.is_none_or(|t| now.saturating_sub(t) >= window));
            if due {
                logs.by_client.retain(|_, ring| {
                    ring.last()
                        .is_some_and(|last| now.saturating_sub(last) < window)
                });
                logs.sweep_at = (2 * logs.by_client.len()).max(Self::SWEEP_AT_LEAST);
                logs.swept = Some(now);
            }
            if logs.by_client.len() >= self.max_clients {
                return Err(Refused {
                    retry_after: self.window,
                });
            }
        }
        if self.limit == 0 {
            return Err(Refused {
                retry_after: self.window,
            });
        }
        logs.by_client
            .entry(client)
            .or_default()
            .admit(now, self.limit, window)
    }

    /// The limit and its window.
    pub fn limit(&self) -> (usize, Duration) {
        (self.limit, self.window)
    }

    /// The clients remembered now.
    pub fn clients(&self) -> usize {
        self.logs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_client
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_has_its_own_window_and_idle_ones_are_forgotten() {
        let limiter = AddressLimiter::new(30, Duration::from_secs(60));
        let start = Instant::now();
        let at = |t: u64| move || start + Duration::from_secs(t);
        let ip = |s: &str| -> std::net::IpAddr { s.parse().unwrap() };
        let a = ip("127.0.0.1");
        let passed = (0..100)
            .filter(|_| limiter.check_with(a, at(0)).is_ok())
            .count();
        assert_eq!(passed, 30);
        let refused = limiter.check_with(a, at(59)).unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_secs(1));
        // The same client written as IPv4-mapped IPv6.
        assert!(limiter.check_with(ip("::ffff:127.0.0.1"), at(59)).is_err());
        assert!(limiter.check_with(a, at(60)).is_ok());
        // One IPv6 /64 is one client; the next /64 another.
        for i in 0..30 {
            let host = ip(&format!("2001:db8:0:1::{:x}", i + 1));
            limiter.check_with(host, at(0)).unwrap();
        }
        assert!(limiter
            .check_with(ip("2001:db8:0:1:ffff::1"), at(1))
            .is_err());
        assert!(limiter.check_with(ip("2001:db8:0:2::1"), at(1)).is_ok());
        assert_eq!(limiter.clients(), 3);
        // Clients idle for a window go when the map is swept.
        let later = 200;
        for i in 0..AddressLimiter::SWEEP_AT_LEAST as u32 {
            let address = std::net::IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            limiter.check_with(address, at(later)).unwrap();
        }
        // The three idle ones went; without the sweep there would be three more.
        assert_eq!(limiter.clients(), AddressLimiter::SWEEP_AT_LEAST);
    }

    /// A full map is swept a window after its last sweep, even when it has not doubled
    /// since: clients that went idle make room for new ones.
    #[test]
    fn a_full_map_makes_room_once_its_clients_are_idle() {
        let limiter = AddressLimiter::with_max_clients(30, Duration::from_secs(60), 8);
        let start = Instant::now();
        let at = |t: u64| move || start + Duration::from_secs(t);
        let client = |i: u32| std::net::IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
        for i in 0..8 {
            limiter.check_with(client(i), at(0)).unwrap();
        }
        // Full of clients active in the last minute: a new one is refused.
        let refused = limiter.check_with(client(8), at(1)).unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_secs(60));
        assert!(limiter.check_with(client(8), at(30)).is_err());
        // Known clients go on being served.
        assert!(limiter.check_with(client(0), at(30)).is_ok());
        assert_eq!(limiter.clients(), 8);
        // A minute after the last sweep (at 1 s) the idle ones go; client 0 (active at
        // 30 s) stays.
        assert!(limiter.check_with(client(8), at(61)).is_ok());
        assert_eq!(limiter.clients(), 2);
    }

    /// The ring keeps exactly the last `limit` times, as it wraps around many times.
    #[test]
    fn the_ring_refuses_exactly_as_a_log_of_every_request_would() {
        let limiter = RateLimiter::new(1, 7, Duration::from_millis(100));
        let start = Instant::now();
        let mut accepted: Vec<u64> = Vec::new();
        // Irregular arrivals: bursts and gaps, over about 17 s.
        let mut t = 0u64;
        for i in 0..2000u64 {
            t += [0, 1, 3, 0, 17, 2, 40][(i % 7) as usize] * ((i / 50) % 3);
            let now = start + Duration::from_millis(t);
            let in_window = accepted.iter().filter(|&&a| t - a < 100).count();
            let expected = in_window < 7;
            let got = limiter.check_with(0, || now);
            assert_eq!(got.is_ok(), expected, "request {i} at {t} ms");
            match got {
                Ok(()) => accepted.push(t),
                Err(refused) => {
                    let oldest = accepted[accepted.len() - 7];
                    assert_eq!(
                        refused.retry_after,
                        Duration::from_millis(100 - (t - oldest))
                    );
                }
            }
        }
        assert!(accepted.len() > 100, "{}", accepted.len());
    }

    /// A limit meant as "no limit" reserves room as requests come, not for all of it.
    #[test]
    fn a_huge_limit_reserves_room_as_it_fills() {
        let limiter = AddressLimiter::new(u32::MAX as usize, Duration::from_secs(60));
        let start = Instant::now();
        let client = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
        for _ in 0..1000 {
            limiter.check_with(client, || start).unwrap();
        }
        let logs = limiter.logs.lock().unwrap();
        let ring = &logs.by_client[&client];
        assert_eq!(ring.times.len(), 1000);
        assert!(ring.times.capacity() < 4096, "{}", ring.times.capacity());
    }

    #[test]
    fn a_limit_of_zero_accepts_nothing() {
        let limiter = RateLimiter::new(1, 0, Duration::from_secs(1));
        let refused = limiter.check_with(0, Instant::now).unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_secs(1));
    }

    #[test]
    fn no_window_holds_more_than_the_limit() {
        let limiter = RateLimiter::new(2, 100, Duration::from_secs(1));
        let start = Instant::now();
        // A burst: exactly 100 pass, the rest are refused with a wait of about 1 s.
        let passed = (0..1000)
            .filter(|_| limiter.check_with(0, || start).is_ok())
            .count();
        assert_eq!(passed, 100);
        let refused = limiter.check_with(0, || start).unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_secs(1));
        assert_eq!(refused.retry_after_secs(), 1);
        // The other team is not affected.
        assert!(limiter.check_with(1, || start).is_ok());
        // Just before the window ends: still refused; at its end: one more each.
        assert!(limiter
            .check_with(0, || start + Duration::from_millis(999))
            .is_err());
        let later = start + Duration::from_secs(1);
        assert_eq!(
            (0..1000)
                .filter(|_| limiter.check_with(0, || later).is_ok())
                .count(),
            100
        );
    }

    #[test]
    fn a_steady_stream_at_the_limit_passes_and_windows_never_overflow() {
        let limiter = RateLimiter::new(1, 100, Duration::from_secs(1));
        let start = Instant::now();
        let mut accepted = Vec::new();
        // One request every 5 ms for 3 s (200/s offered): half pass, evenly.
        for i in 0..600u64 {
            let t = start + Duration::from_millis(5 * i);
            if limiter.check_with(0, || t).is_ok() {
                accepted.push(t);
            }
        }
        assert!((290..=310).contains(&accepted.len()), "{}", accepted.len());
        for (i, &t) in accepted.iter().enumerate() {
            let in_window = accepted[i..]
                .iter()
                .take_while(|&&u| u < t + Duration::from_secs(1))
                .count();
            assert!(in_window <= 100, "{in_window} in the window from {i}");
        }
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        let r = Refused {
            retry_after: Duration::from_millis(1),
        };
        assert_eq!(r.retry_after_secs(), 1);
        let r = Refused {
            retry_after: Duration::from_millis(1500),
        };
        assert_eq!(r.retry_after_secs(), 2);
    }
}

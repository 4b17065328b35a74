//! What the edge bench reads of its processes in /proc: CPU time and RSS.

use std::time::{Duration, Instant};

/// The CPU time a process has used (user and system), in ms.
pub fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command's closing parenthesis: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |at: usize| {
        fields
            .get(at)
            .and_then(|field| field.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Clock ticks of 10 ms (USER_HZ is 100 on Linux).
    (ticks(11) + ticks(12)) * 10.0
}

/// A process's CPU time once it has been idle for 300 ms (at most `patience`).
pub fn cpu_when_idle(pid: u32, patience: Duration) -> f64 {
    let clock = Instant::now();
    let mut last = cpu_ms(pid);
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = cpu_ms(pid);
        if now == last || clock.elapsed() > patience {
            return now;
        }
        last = now;
    }
}

/// A process's resident memory, in MB.
pub fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

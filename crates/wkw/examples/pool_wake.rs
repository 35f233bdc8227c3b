//! What handing work to a parked rayon thread costs on this machine: `rayon::join` of two
//! equal busy-waits against running both on the calling thread, medians of 2000 rounds.
//!
//! The 2-thread rows of the bench hand each read to the pool; when a read takes only a few
//! hundred microseconds (the unaligned 100³ box), the time the second thread needs to wake up
//! and steal its half is a visible share of it. This measures that time on its own.
//!
//! `cargo run --release -p wkw --example pool_wake`
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::{Duration, Instant};

fn busy(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    println!("work per half | both on the caller | rayon::join | join overhead");
    for us in [10u64, 50, 100, 150] {
        let d = Duration::from_micros(us);
        let (mut serial, mut joined) = (Vec::new(), Vec::new());
        for _ in 0..2000 {
            let t = Instant::now();
            busy(d);
            busy(d);
            serial.push(t.elapsed());
            let t = Instant::now();
            rayon::join(|| busy(d), || busy(d));
            joined.push(t.elapsed());
        }
        let (s, j) = (median(serial), median(joined));
        println!(
            "{us:>10} µs | {:>15.1} µs | {:>8.1} µs | {:>10.1} µs",
            s.as_secs_f64() * 1e6,
            j.as_secs_f64() * 1e6,
            (j.as_secs_f64() - d.as_secs_f64()) * 1e6
        );
    }
}

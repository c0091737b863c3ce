//! `streaming10k`: 10,000 WebSocket clients (`HOOKWIRE_LOAD_CLIENTS`) all chatting back to back
//! against one hookwire (default settings, the repository's skills), not idle: chats/s, first
//! token, the gap between tokens, memory per active chat, the processes' CPU, their open files,
//! and what hookwire logged. Run at the upstream's usual pace (200 tokens, one every 20 ms: 500,000
//! tokens/s for 10,000 chats) and, unless `HOOKWIRE_STREAMING_SLOW_MS=0`, again at a slower one
//! that two quiet cores may carry (`HOOKWIRE_STREAMING_SLOW_TOKENS` tokens, 50, one every
//! `HOOKWIRE_STREAMING_SLOW_MS`, 300 ms: ~33,000 tokens/s).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::wires::{ws_clients, Mishaps};
use super::{
    cpu_time, env_number, median, mib, print_figures, run_clients, settle, start_hookwire,
    start_upstream_paced, Pace,
};

/// How often the processes are looked at during the run.
const SAMPLE_EVERY: Duration = Duration::from_secs(5);

pub(super) async fn streaming10k() {
    let clients = env_number("HOOKWIRE_LOAD_CLIENTS", 10_000) as usize;
    let seconds = env_number("HOOKWIRE_LOAD_SECONDS", 20);
    let slow = env_number("HOOKWIRE_STREAMING_SLOW_MS", 300);
    let slow_tokens = env_number("HOOKWIRE_STREAMING_SLOW_TOKENS", 50) as usize;
    let limit = open_files_limit(std::process::id()).unwrap_or(0);
    // Each process inherits this one's limit. hookwire holds a socket per client and one to the
    // upstream per streaming chat, the upstream one per chat, this process one per client.
    println!(
        "streaming {clients}: open files limit {limit} per process; hookwire needs ~{} (a socket per client, one upstream connection per streaming chat, ~50 of its own), the fake upstream ~{clients}, the clients ~{clients}",
        2 * clients + 50
    );
    let mut paces = vec![Pace::USUAL];
    if slow > 0 {
        paces.push(Pace {
            tokens: slow_tokens.max(1),
            interval: Duration::from_millis(slow),
            ..Pace::USUAL
        });
    }
    for pace in paces {
        run_streaming(clients, seconds, pace).await;
    }
}

/// A process's CPU and open files, sampled during the run.
struct Watched {
    name: &'static str,
    pid: u32,
}

/// What the sampler saw: per process, the CPU share of each interval (% of a core) and the most
/// files open at once; the machine's busy share (% of all cores).
#[derive(Default)]
struct Sampled {
    cpu: Vec<Vec<f64>>,
    files: Vec<usize>,
    machine: Vec<f64>,
}

async fn run_streaming(clients: usize, seconds: u64, pace: Pace) {
    let Ok(scratch) = tempfile::tempdir() else {
        eprintln!("cannot make a scratch folder");
        return;
    };
    let Some(upstream) = start_upstream_paced(pace) else {
        return;
    };
    let Some(hookwire) = start_hookwire(&upstream, scratch.path()) else {
        return;
    };
    settle().await;
    let chat_length = pace.chat_length();
    // The clients start within a second and their chats are as long as the pace makes them: a
    // window shorter than a chat would count one wave of ends, or none.
    let seconds = seconds.max(chat_length.as_secs_f64().ceil() as u64);
    println!(
        "streaming {clients} at once, a token every {} ms ({} tokens, {:.1} s a chat), {seconds} s measured:",
        pace.interval.as_millis(),
        pace.tokens,
        chat_length.as_secs_f64()
    );
    let idle_rss = hookwire.rss();
    let mishaps = Mishaps::new(pace.tokens);
    let connecting = Instant::now();
    let sockets = ws_clients(&hookwire, clients, &mishaps).await;
    let opened = sockets.len();
    println!(
        "  {opened} of {clients} connected in {:.1} s",
        connecting.elapsed().as_secs_f64()
    );
    if opened == 0 {
        println!("hookwire's log: {}", hookwire.log_summary());
        return;
    }
    settle().await;
    let connected_rss = hookwire.rss();

    let watched = vec![
        Watched {
            name: "hookwire",
            pid: hookwire.pid(),
        },
        Watched {
            name: "upstream",
            pid: upstream.pid(),
        },
        Watched {
            name: "clients",
            pid: std::process::id(),
        },
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn(sample(watched, stop.clone()));
    let figures = run_clients(&hookwire, sockets, seconds, pace, None)
        .await
        .map(|(figures, _)| figures);
    stop.store(true, Ordering::Relaxed);
    let sampled = sampler.await.unwrap_or_default();
    let Some(figures) = figures else {
        return;
    };
    print_figures("hookwire", &figures);

    // What nothing in the way would give: every client one chat per chat's length, a token per
    // interval.
    let ideal = opened as f64 / chat_length.as_secs_f64();
    let ideal_tokens = opened as f64 / pace.interval.as_secs_f64();
    let tag = format!(
        "streaming {opened} @{} ms × {}",
        pace.interval.as_millis(),
        pace.tokens
    );
    println!(
        "{tag}: chats/s {:.1} ({:.0}% of the {:.0} the upstream's pace allows), failed {} ({})",
        figures.chats_per_second,
        100.0 * figures.chats_per_second / ideal,
        ideal,
        figures.failed,
        mishaps.describe()
    );
    println!(
        "{tag}: tokens delivered {:.0}/s ({:.0}% of the {:.0}/s the upstream's pace asks)",
        figures.tokens_per_second,
        100.0 * figures.tokens_per_second / ideal_tokens,
        ideal_tokens
    );
    println!(
        "{tag}: first token p50 {:.1} ms, p99 {:.1} ms; gap p99 +{:.1} ms over the upstream's {} ms",
        figures.first_token_p50,
        figures.first_token_p99,
        figures.gap_p99,
        pace.interval.as_millis()
    );
    println!(
        "{tag}: RSS idle {:.1} MiB, with {opened} idle connections {:.1} MiB, peak {:.1} MiB: {:.1} KiB per active chat ((peak − idle) / {opened}), {:.1} KiB over the idle connection",
        mib(idle_rss),
        mib(connected_rss),
        mib(figures.peak_rss),
        figures.peak_rss.saturating_sub(idle_rss) as f64 / 1024.0 / opened as f64,
        figures.peak_rss.saturating_sub(connected_rss) as f64 / 1024.0 / opened as f64,
    );
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "{tag}: CPU in the window hookwire {:.0}% of a core ({:.1} µs a token); median of the {} s samples: hookwire {:.0}%, upstream {:.0}%, clients {:.0}%, the machine {:.0}% busy of {cores} cores",
        figures.cpu_share,
        figures.cpu_per_token.as_secs_f64() * 1e6,
        SAMPLE_EVERY.as_secs(),
        median(sampled.cpu.first().map(Vec::as_slice).unwrap_or_default()),
        median(sampled.cpu.get(1).map(Vec::as_slice).unwrap_or_default()),
        median(sampled.cpu.get(2).map(Vec::as_slice).unwrap_or_default()),
        median(&sampled.machine),
    );
    let limit = open_files_limit(hookwire.pid()).unwrap_or(0);
    println!(
        "{tag}: most files open at once: hookwire {}, upstream {}, clients {} (limit {limit} each)",
        sampled.files.first().copied().unwrap_or(0),
        sampled.files.get(1).copied().unwrap_or(0),
        sampled.files.get(2).copied().unwrap_or(0),
    );
    // The clients hang up mid-chat when the window ends: hookwire's `websocket write failed`
    // warnings at the end are that.
    println!(
        "{tag}: hookwire's log (its writes that failed at the end are the clients hanging up): {}",
        hookwire.log_summary()
    );
    println!("{tag}: the upstream's log: {}", upstream.log_summary());
}

/// Every [`SAMPLE_EVERY`] until `stop`: the CPU share and open files of each of `watched`, and
/// the machine's busy share, printed as a line and kept.
async fn sample(watched: Vec<Watched>, stop: Arc<AtomicBool>) -> Sampled {
    let mut sampled = Sampled {
        cpu: watched.iter().map(|_| Vec::new()).collect(),
        files: watched.iter().map(|_| 0).collect(),
        machine: Vec::new(),
    };
    let began = Instant::now();
    let mut last_at = Instant::now();
    let mut last_cpu: Vec<Duration> = watched.iter().map(|w| process_cpu(w.pid)).collect();
    let mut last_machine = machine_ticks();
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(SAMPLE_EVERY).await;
        let elapsed = last_at.elapsed().as_secs_f64();
        last_at = Instant::now();
        let mut line = format!("    {:4.0} s:", began.elapsed().as_secs_f64());
        for (index, process) in watched.iter().enumerate() {
            let cpu = process_cpu(process.pid);
            let share = cpu.saturating_sub(last_cpu[index]).as_secs_f64() / elapsed * 100.0;
            last_cpu[index] = cpu;
            let files = open_files(process.pid);
            sampled.cpu[index].push(share);
            sampled.files[index] = sampled.files[index].max(files);
            line.push_str(&format!(
                "  {} {share:3.0}% CPU, {files} files;",
                process.name
            ));
        }
        let machine = machine_ticks();
        if let (Some((busy, total)), Some((last_busy, last_total))) = (machine, last_machine) {
            let share = (busy - last_busy) as f64 / (total - last_total).max(1) as f64 * 100.0;
            sampled.machine.push(share);
            line.push_str(&format!("  machine {share:3.0}% busy"));
        }
        last_machine = machine;
        println!("{line}");
    }
    sampled
}

/// A process's CPU time: `cpu_time`, but this process's own without its children's (the
/// servers it stopped earlier count there once waited for).
fn process_cpu(pid: u32) -> Duration {
    if pid != std::process::id() {
        return cpu_time(pid);
    }
    super::rusage::own_cpu()
}

/// The machine's busy and total ticks (`/proc/stat`'s first line; idle and iowait are not busy).
fn machine_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    let total: u64 = ticks.iter().sum();
    let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// How many files a process holds open.
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|entries| entries.count())
        .unwrap_or(0)
}

/// A process's soft limit of open files (`/proc/PID/limits`).
fn open_files_limit(pid: u32) -> Option<u64> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

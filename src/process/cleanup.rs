//! The cleanup of what runs left (see the module doc of [`super`]): one thread, the cleaner,
//! that passes over `/proc` for every run that ended since its last pass.
//!
//! A pass reads every process's `stat` (and the `environ` of those started since the earliest
//! run it looks for), which costs the same for one run as for fifty. So after each pass the
//! cleaner rests ([`GAP`], or longer when passes are slow, up to [`MAX_REST`]: it spends about a
//! twentieth of a core at most) and then handles together the runs that ended meanwhile; a run
//! that ends while the cleaner is idle is handled at once. What a pass found alive it kills, and
//! the run stays until a pass finds nothing of it alive (or [`CLEANUP_LIMIT`] passed: then what
//! survived is logged).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The variable that marks every process of one run (and that an `env:` map may not set).
pub(crate) const RUN_MARKER: &str = "HOOKWIRE_HOOK_RUN";

/// How long the cleanup keeps killing what a run left before it gives up (and logs it).
const CLEANUP_LIMIT: Duration = Duration::from_secs(2);

/// The least rest after a pass: runs that end within it share the next pass.
const GAP: Duration = Duration::from_millis(20);
/// The rest after a pass is at least this many times the pass's own time…
const REST_PER_WORK: u32 = 20;
/// …but no longer than this, so that what a run left is never killed much later.
const MAX_REST: Duration = Duration::from_millis(250);

/// What identifies one run's processes.
#[derive(Debug, Clone)]
pub(super) struct Run {
    /// The shell's pid, which is its process group's id.
    pub(super) group: i32,
    /// The shell's start time (clock ticks since boot): the run's processes started no earlier.
    pub(super) started: u64,
    /// The value of [`RUN_MARKER`] in their environment.
    pub(super) marker: String,
}

/// The hook shells (and `ServerChild`ren) that tokio owns, by pid, from their start until tokio
/// has reaped them: the orphan reaping must leave them alone. They are the only children the
/// server starts; a child of another kind would have to be registered here too, or a
/// subreaper's cleanup could reap it before its owner does.
static SHELLS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

pub(super) fn shells() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    SHELLS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Hands `run` (its shell reaped, or its group killed and its shell reaped) to the cleaner; does
/// not block.
pub(super) fn clean_up_later(run: Run) {
    static CLEANER: std::sync::OnceLock<Option<Cleaner>> = std::sync::OnceLock::new();
    match CLEANER.get_or_init(Cleaner::start) {
        Some(cleaner) => cleaner.clean_up(run),
        // No thread for the cleaner (logged once): each run is cleaned up on its own.
        None => match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(move || clean_up_now(run))),
            Err(_) => clean_up_now(run),
        },
    }
}

/// Kills and reaps what `run` left, in this thread (blocking): the cleanup when there is no
/// cleaner, or no runtime left to wait in.
pub(super) fn clean_up_now(run: Run) {
    let mut pending = vec![Pending::new(run)];
    let mut pause = Duration::from_millis(1);
    loop {
        pass(&mut pending);
        if pending.is_empty() {
            return;
        }
        // What the pass killed is dead by the next one, which reaps it.
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// The runs waiting for the cleaner's next pass, and its thread's wake-up.
struct Cleaner {
    shared: Arc<Shared>,
}

struct Shared {
    ended: Mutex<Vec<Run>>,
    wake: Condvar,
    /// Passes over `/proc` so far (for the tests).
    passes: AtomicU64,
}

impl Cleaner {
    /// Starts the cleaner's thread (`None`, logged, when the system gives no thread).
    fn start() -> Option<Cleaner> {
        let shared = Arc::new(Shared {
            ended: Mutex::new(Vec::new()),
            wake: Condvar::new(),
            passes: AtomicU64::new(0),
        });
        let for_thread = shared.clone();
        match std::thread::Builder::new()
            .name("hook-cleanup".into())
            .spawn(move || clean_up_forever(&for_thread))
        {
            Ok(_) => Some(Cleaner { shared }),
            Err(error) => {
                tracing::warn!(%error, "no thread for the cleanup of hook processes: each run is cleaned up on its own");
                None
            }
        }
    }

    fn clean_up(&self, run: Run) {
        self.shared
            .ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(run);
        self.shared.wake.notify_one();
    }
}

/// The cleaner's thread: a pass for the runs that ended, then again (at most every [`GAP`])
/// while any run had something alive or more runs ended.
fn clean_up_forever(shared: &Shared) {
    let mut pending: Vec<Pending> = Vec::new();
    loop {
        {
            let mut ended = shared.ended.lock().unwrap_or_else(PoisonError::into_inner);
            while ended.is_empty() && pending.is_empty() {
                ended = shared
                    .wake
                    .wait(ended)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            pending.extend(ended.drain(..).map(Pending::new));
        }
        let start = Instant::now();
        pass(&mut pending);
        shared.passes.fetch_add(1, Ordering::Relaxed);
        // Runs that end meanwhile wait for the next pass, which looks for all of them at once;
        // what this pass killed is dead by then and is reaped.
        std::thread::sleep((start.elapsed() * REST_PER_WORK).clamp(GAP, MAX_REST));
    }
}

/// A run being cleaned up, and when the cleanup gives up on it.
struct Pending {
    run: Run,
    deadline: Instant,
}

impl Pending {
    fn new(run: Run) -> Pending {
        Pending {
            run,
            deadline: Instant::now() + CLEANUP_LIMIT,
        }
    }
}

/// One pass over `/proc` for `pending`: reaps the zombies that are ours to reap, kills what is
/// alive of each run, and drops the runs of which nothing is left alive (or whose time is up).
#[cfg(target_os = "linux")]
fn pass(pending: &mut Vec<Pending>) {
    if pending.is_empty() {
        return;
    }
    let me = std::process::id() as i32;
    // As a subreaper (or PID 1), every orphan of a hook is ours to reap, including ones that
    // died while their hook ran and that no marker names any more.
    let adopts = me == 1 || matches!(rustix::process::child_subreaper(), Ok(Some(_)));
    let earliest = pending.iter().map(|p| p.run.started).min().unwrap_or(0);
    let by_group: HashMap<i32, usize> = pending
        .iter()
        .enumerate()
        .map(|(index, p)| (p.run.group, index))
        .collect();
    let by_marker: HashMap<&str, usize> = pending
        .iter()
        .enumerate()
        .map(|(index, p)| (p.run.marker.as_str(), index))
        .collect();
    let mut alive: Vec<Vec<proc::Process>> = vec![Vec::new(); pending.len()];
    for process in proc::processes() {
        // Started since the run began: a group id (or pid) freed and reused meanwhile by someone
        // else's process is not ours to kill.
        let of_run = |index: &usize| process.started >= pending[*index].run.started;
        let member = by_group
            .get(&process.group)
            .copied()
            .filter(of_run)
            .or_else(|| {
                if process.state == 'Z' || process.started < earliest {
                    return None;
                }
                let marker = proc::marker(process.pid)?;
                by_marker.get(marker.as_str()).copied().filter(of_run)
            });
        if process.state == 'Z' {
            if process.parent == me && (member.is_some() || adopts) {
                reap(process.pid);
            }
        } else if let Some(index) = member {
            alive[index].push(process);
        }
    }
    let now = Instant::now();
    let mut index = 0;
    pending.retain(|p| {
        let alive = &alive[index];
        index += 1;
        if alive.is_empty() {
            return false;
        }
        if alive.iter().any(|process| process.group == p.run.group) {
            // Members alive: the group exists, so its id is not reused.
            kill_group(p.run.group);
        }
        for process in alive {
            if let Some(pid) = rustix::process::Pid::from_raw(process.pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        if now >= p.deadline {
            let pids: Vec<i32> = alive.iter().map(|process| process.pid).collect();
            tracing::warn!(?pids, "processes left by a hook survived being killed");
            return false;
        }
        true
    });
}

/// Without `/proc`, the process group is all that is known of a run.
#[cfg(not(target_os = "linux"))]
fn pass(pending: &mut Vec<Pending>) {
    for p in pending.drain(..) {
        kill_group(p.run.group);
    }
}

/// Kills the hook's whole process group (the shell and everything that stayed in it).
pub(super) fn kill_group(group: i32) {
    if let Some(group) = rustix::process::Pid::from_raw(group) {
        // ESRCH: nobody is left in the group.
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}

/// Reaps `pid`, a zombie child of ours, unless it is a hook shell that tokio will reap.
#[cfg(target_os = "linux")]
fn reap(pid: i32) {
    let shells = shells();
    if shells.contains(&pid) {
        return;
    }
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        // ECHILD: reaped by someone else first.
        let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
    }
}

/// The start time of process `pid` (0 when unknown: then every process is looked at).
pub(super) fn started(pid: i32) -> u64 {
    #[cfg(target_os = "linux")]
    {
        proc::stat(pid).map_or(0, |process| process.started)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        0
    }
}

/// Reading `/proc`.
#[cfg(target_os = "linux")]
pub(super) mod proc {
    /// The fields of `/proc/PID/stat` the cleanup needs.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Process {
        pub(crate) pid: i32,
        /// `R`, `S`, `D`, `Z`, …
        pub(crate) state: char,
        pub(crate) parent: i32,
        pub(crate) group: i32,
        /// Clock ticks since boot.
        pub(crate) started: u64,
    }

    /// Every process there is (those that vanish while being read are passed over).
    pub(crate) fn processes() -> impl Iterator<Item = Process> {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
            .filter_map(stat)
    }

    pub(crate) fn stat(pid: i32) -> Option<Process> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_stat(pid, &text)
    }

    /// `pid (comm) state ppid pgrp session … starttime …`; `comm` may hold spaces and `)`, so
    /// the fields are counted from the last `)`.
    pub(crate) fn parse_stat(pid: i32, text: &str) -> Option<Process> {
        let (_, rest) = text.rsplit_once(')')?;
        let mut fields = rest.split_whitespace();
        let state = fields.next()?.chars().next()?;
        let parent = fields.next()?.parse().ok()?;
        let group = fields.next()?.parse().ok()?;
        // `session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
        // priority nice num_threads itrealvalue`, then `starttime`.
        let started = fields.nth(16)?.parse().ok()?;
        Some(Process {
            pid,
            state,
            parent,
            group,
            started,
        })
    }

    /// The value of [`super::RUN_MARKER`] in `pid`'s environment (`None` when it has none, or
    /// the environment cannot be read).
    pub(crate) fn marker(pid: i32) -> Option<String> {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        let prefix = format!("{}=", super::RUN_MARKER);
        environ.split(|byte| *byte == 0).find_map(|entry| {
            let value = entry.strip_prefix(prefix.as_bytes())?;
            String::from_utf8(value.to_vec()).ok()
        })
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::process::execute;
    use serde_json::json;
    use std::os::unix::process::CommandExt;

    #[test]
    fn stat_lines_are_read_from_the_last_parenthesis() {
        let line =
            "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1 2 3";
        let process = proc::parse_stat(4242, line).unwrap();
        assert_eq!(
            (
                process.state,
                process.parent,
                process.group,
                process.started
            ),
            ('S', 17, 4242, 987654)
        );
        assert!(proc::parse_stat(1, "garbage").is_none());
        assert!(proc::parse_stat(1, "1 (short) S 0 1 1 0").is_none());
    }

    /// Runs that end close together share the cleaner's passes, and every one of them is
    /// cleaned up: here ten process groups of a `sleep` each, their runs handed over 1 ms apart.
    #[test]
    fn runs_that_end_together_share_a_pass() {
        let cleaner = Cleaner::start().unwrap();
        let mut sleepers = Vec::new();
        for _ in 0..10 {
            let marker = uuid::Uuid::new_v4().simple().to_string();
            let child = std::process::Command::new("sleep")
                .arg("300")
                .env(RUN_MARKER, &marker)
                .process_group(0)
                .spawn()
                .unwrap();
            let pid = child.id() as i32;
            sleepers.push((child, pid));
            cleaner.clean_up(Run {
                group: pid,
                started: started(pid),
                marker,
            });
            std::thread::sleep(Duration::from_millis(1));
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let gone = |pid: i32| proc::stat(pid).is_none();
        while !sleepers.iter().all(|(_, pid)| gone(*pid)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        for (_, pid) in &sleepers {
            assert!(gone(*pid), "{pid} left: {:?}", proc::stat(*pid));
        }
        let passes = cleaner.shared.passes.load(Ordering::Relaxed);
        assert!(passes <= 5, "10 runs took {passes} passes");
    }

    /// What a hook leaves in its group or outside it (`setsid`) is killed when the shell exits.
    #[tokio::test]
    async fn processes_left_behind_are_killed_when_the_shell_exits() {
        let dir = tempfile::tempdir().unwrap();
        let env = vec![(
            "PATH".to_string(),
            std::env::var_os("PATH").unwrap_or_default(),
        )];
        let script = "setsid sh -c 'echo $$ > out.pid; exec sleep 300' >/dev/null 2>&1 &\n\
                      sh -c 'echo $$ > in.pid; exec sleep 300' >/dev/null 2>&1 &\n\
                      until [ -s out.pid ] && [ -s in.pid ]; do sleep 0.01; done";
        let run = execute(
            script,
            &env,
            dir.path(),
            &json!({}),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        assert_eq!(run.exit_code, Some(0), "{run:?}");
        for file in ["out.pid", "in.pid"] {
            let pid: i32 = std::fs::read_to_string(dir.path().join(file))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            // Killed (in the background): gone, or a zombie waiting for its reaper (this test
            // process is none).
            let dead = || matches!(proc::stat(pid).map(|p| p.state), None | Some('Z'));
            let deadline = Instant::now() + Duration::from_secs(5);
            while !dead() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert!(dead(), "{file}: {:?}", proc::stat(pid));
        }
    }
}

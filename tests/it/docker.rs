//! The container image's build stage builds on the official `rust:1-slim-bookworm` image, which
//! has far fewer programs than a developer's machine (no `make`, for one). No Docker daemon or
//! image registry is needed to check it: the crates whose build scripts run programs are built
//! here with a `PATH` holding only the programs of that image's Debian packages
//! (`tests/data/docker/`) and of the packages the build stage installs itself.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The build stage of the Dockerfile: from its `FROM … AS build` to the next `FROM`.
fn build_stage(dockerfile: &str) -> String {
    let start = dockerfile
        .find("FROM rust:1-slim-bookworm AS build")
        .expect("the build stage is FROM rust:1-slim-bookworm AS build, as the package list says");
    let rest = &dockerfile[start + 4..];
    let end = rest.find("\nFROM ").unwrap_or(rest.len());
    rest[..end].to_string()
}

/// The packages a stage's `apt-get install` lines name (flags left out).
fn installed_by(stage: &str) -> Vec<String> {
    let joined = stage.replace("\\\n", " ");
    let mut packages = Vec::new();
    for command in joined.split("&&").flat_map(|part| part.split(';')) {
        let words: Vec<&str> = command.split_whitespace().collect();
        if let Some(at) = words.windows(2).position(|w| w == ["apt-get", "install"]) {
            packages.extend(
                words[at + 2..]
                    .iter()
                    .filter(|w| !w.starts_with('-'))
                    .map(|w| w.to_string()),
            );
        }
    }
    packages
}

/// The programs (files under a `bin` or `sbin` folder) of an installed Debian package.
fn programs_of(package: &str) -> Vec<PathBuf> {
    let listed = Command::new("dpkg")
        .args(["-L", package])
        .output()
        .expect("dpkg runs");
    assert!(
        listed.status.success(),
        "the package {package} is not installed here (apt-get install {package}): {}",
        String::from_utf8_lossy(&listed.stderr)
    );
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(PathBuf::from)
        .filter(|path| {
            path.parent()
                .and_then(Path::file_name)
                .is_some_and(|dir| dir == "bin" || dir == "sbin")
        })
        .filter(|path| {
            std::fs::metadata(path)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .collect()
}

/// The packages of the crate's release build whose build scripts compile C (they use `cc`).
fn crates_that_run_programs() -> Vec<String> {
    // Cargo.lock: `[[package]]` blocks of `name = …`, `version = …`, `dependencies = [ … ]`.
    let lock = std::fs::read_to_string(repo("Cargo.lock")).unwrap();
    let runs_programs: BTreeSet<String> = lock
        .split("[[package]]")
        .filter(|block| {
            block.lines().any(|line| {
                let dependency = line.trim().trim_end_matches(',').trim_matches('"');
                let name = dependency.split(' ').next().unwrap_or_default();
                name == "cc" || name == "cmake"
            })
        })
        .filter_map(|block| {
            let field = |key: &str| {
                block.lines().find_map(|line| {
                    line.strip_prefix(key)
                        .map(|value| value.trim().trim_matches('"').to_string())
                })
            };
            let name = field("name = ")?;
            // The build tools themselves are only build dependencies: cargo builds them for
            // the crates that use them (and cannot be asked for them with `-p`).
            (name != "cmake" && name != "cc")
                .then(|| Some(format!("{name}@{}", field("version = ")?)))
                .flatten()
        })
        .collect();
    // What `cargo build --release` builds for this machine: normal and build dependencies.
    let tree = Command::new(env!("CARGO"))
        .current_dir(repo(""))
        .args([
            "tree",
            "--locked",
            "--edges",
            "normal,build",
            "--prefix",
            "none",
        ])
        .args(["--format", "{p}"])
        .output()
        .unwrap();
    assert!(
        tree.status.success(),
        "{}",
        String::from_utf8_lossy(&tree.stderr)
    );
    let built: BTreeSet<String> = String::from_utf8_lossy(&tree.stdout)
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?;
            let version = words.next()?.trim_start_matches('v');
            Some(format!("{name}@{version}"))
        })
        .collect();
    runs_programs.intersection(&built).cloned().collect()
}

#[test]
fn the_docker_build_stage_has_every_program_the_build_scripts_run() {
    let dockerfile = std::fs::read_to_string(repo("Dockerfile")).unwrap();
    let stage = build_stage(&dockerfile);
    let image =
        std::fs::read_to_string(repo("tests/data/docker/rust-1-slim-bookworm.packages")).unwrap();
    let mut packages: Vec<String> = image
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_string)
        .collect();
    packages.extend(installed_by(&stage));

    // A folder of links to those programs, and to the alternatives (`cc`, `awk`…) that point
    // at one of them, as the packages' install scripts make them.
    let bin = tempfile::tempdir().unwrap();
    let mut targets = BTreeSet::new();
    for package in &packages {
        for program in programs_of(package) {
            let link = bin.path().join(program.file_name().unwrap());
            if !link.exists() {
                std::os::unix::fs::symlink(&program, &link).unwrap();
            }
            targets.insert(std::fs::canonicalize(&program).unwrap_or(program));
        }
    }
    for entry in std::fs::read_dir("/etc/alternatives").unwrap().flatten() {
        let link = bin.path().join(entry.file_name());
        let points_at_ours =
            std::fs::canonicalize(entry.path()).is_ok_and(|target| targets.contains(&target));
        if points_at_ours && !link.exists() {
            std::os::unix::fs::symlink(entry.path(), &link).unwrap();
        }
    }

    let crates = crates_that_run_programs();
    assert!(
        crates.iter().any(|c| c.starts_with("tikv-jemalloc-sys@")),
        "the allocator's C build is among them: {crates:?}"
    );
    let toolchain = Path::new(env!("CARGO")).parent().unwrap();
    let path = format!("{}:{}", bin.path().display(), toolchain.display());
    let mut build = Command::new(env!("CARGO"));
    build
        .current_dir(repo(""))
        .env_clear()
        .env("PATH", path)
        .args(["build", "--release", "--locked", "--target-dir"])
        .arg(repo("target/docker-build-stage"));
    for name in ["HOME", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN"] {
        if let Some(value) = std::env::var_os(name) {
            build.env(name, value);
        }
    }
    for krate in &crates {
        build.args(["-p", krate]);
    }
    let built = build.output().unwrap();
    let stderr = String::from_utf8_lossy(&built.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(30).collect();
    assert!(
        built.status.success(),
        "the build stage cannot build {crates:?} with the programs of {} packages ({} of them \
         installed by the stage: {:?}); the end of cargo's output, last line first:\n{}",
        packages.len(),
        installed_by(&stage).len(),
        installed_by(&stage),
        tail.join("\n")
    );
}

//! The workspace sandbox: every tool path is resolved against one root, and nothing outside it is
//! ever opened.
//!
//! Rules: paths are relative; absolute paths and `..` components are refused outright. On Linux
//! the path is opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` from the root, so the
//! kernel refuses any symlink that leads out before anything is opened; the first open is
//! `O_PATH`, and only a regular file or a folder is then opened for reading, so a FIFO, socket or
//! device is never opened at all. Where the kernel lacks `openat2` (or a sandbox forbids it) the
//! path is opened non-blocking and the opened file verified *after* (through `/proc/self/fd` on
//! Linux, by device and inode elsewhere): a symlink swapped in during a call cannot win the race
//! either way. A hard link inside the workspace is an ordinary file of it.
//!
//! [`normalize`] gives the one spelling of a path that hooks see and tools use.

use std::fs::File;
use std::path::{Component, Path, PathBuf};

/// A tool failure, shown to the model as an error result.
pub(super) use super::ToolError;

/// The folder the built-in tools work in: every path they are given is resolved against its
/// root, and nothing outside it is ever opened.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

/// What an opened path turned out to be.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum Kind {
    File,
    Dir,
}

impl Workspace {
    /// A workspace rooted at `root` (which must exist; it is canonicalised).
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<Self> {
        Ok(Self {
            root: root.as_ref().canonicalize()?,
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The lexical path of `relative` under the root, refusing absolute paths and `..`.
    pub(crate) fn resolve(&self, relative: &str) -> Result<PathBuf, ToolError> {
        if relative.contains('\0') {
            return Err(ToolError::new(format!(
                "path {relative:?} contains a NUL byte"
            )));
        }
        let path = Path::new(relative);
        let mut resolved = self.root.clone();
        for component in path.components() {
            match component {
                Component::Normal(part) => resolved.push(part),
                Component::CurDir => {}
                Component::ParentDir => return Err(ToolError::new(format!("path {relative:?} is outside the workspace ('..' is not allowed)"))),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(ToolError::new(format!("path {relative:?} is outside the workspace (use a path relative to the workspace)")))
                }
            }
        }
        Ok(resolved)
    }

    /// Opens `relative` and proves the opened file is inside the root and is a regular file or a
    /// folder.
    pub(crate) fn open(&self, relative: &str) -> Result<(File, Kind), ToolError> {
        let path = self.resolve(relative)?;
        self.open_path(&path, relative)
    }

    /// Like [`Workspace::open`] for a path already under the root (from a directory walk).
    pub(crate) fn open_path(&self, path: &Path, shown: &str) -> Result<(File, Kind), ToolError> {
        #[cfg(target_os = "linux")]
        if let Ok(relative) = path.strip_prefix(&self.root) {
            match beneath::open(&self.root, relative) {
                Ok(beneath::Opened::File(file, kind)) => return Ok((file, kind)),
                Ok(beneath::Opened::Special) => return Err(not_regular(shown)),
                Err(beneath::Error::Unsupported) => {} // the open-then-verify path below
                Err(beneath::Error::Outside) => return Err(outside_through_symlink(shown)),
                Err(beneath::Error::Io(error)) => return Err(open_error(&error, shown)),
            }
        }
        let file = open_nonblocking(path).map_err(|e| open_error(&e, shown))?;
        if !self.contains_opened(&file, path)? {
            return Err(outside_through_symlink(shown));
        }
        let metadata = file
            .metadata()
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        let kind = if metadata.is_file() {
            Kind::File
        } else if metadata.is_dir() {
            Kind::Dir
        } else {
            return Err(not_regular(shown));
        };
        Ok((file, kind))
    }

    /// Whether the opened `file` really lies under the root.
    #[cfg(target_os = "linux")]
    fn contains_opened(&self, file: &File, _path: &Path) -> Result<bool, ToolError> {
        use std::os::fd::AsRawFd;
        let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|e| format!("cannot verify the opened file: {e}"))?;
        Ok(real.starts_with(&self.root))
    }

    #[cfg(not(target_os = "linux"))]
    fn contains_opened(&self, file: &File, path: &Path) -> Result<bool, ToolError> {
        use std::os::unix::fs::MetadataExt;
        let Ok(real) = path.canonicalize() else {
            return Ok(false);
        };
        let (Ok(opened), Ok(named)) = (file.metadata(), std::fs::metadata(&real)) else {
            return Ok(false);
        };
        Ok(real.starts_with(&self.root)
            && opened.dev() == named.dev()
            && opened.ino() == named.ino())
    }

    /// The path of an opened folder that names exactly that folder (no second lookup by name).
    #[cfg(target_os = "linux")]
    pub(crate) fn opened_dir_path(&self, dir: &File, _path: &Path) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()))
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn opened_dir_path(&self, _dir: &File, path: &Path) -> PathBuf {
        path.to_path_buf()
    }

    /// `path` relative to the root, with `/`, for showing to the model.
    pub(crate) fn display(&self, path: &Path) -> String {
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        let text = relative.to_string_lossy().replace('\\', "/");
        if text.is_empty() {
            ".".into()
        } else {
            text
        }
    }
}

/// Opens read-only without blocking on FIFOs.
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        // NOCTTY: a terminal behind a path never becomes the server's controlling terminal.
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(path)
}

fn open_error(error: &std::io::Error, shown: &str) -> ToolError {
    ToolError::new(match error.kind() {
        std::io::ErrorKind::NotFound => format!("no such file or directory: {shown}"),
        std::io::ErrorKind::PermissionDenied => format!("permission denied: {shown}"),
        std::io::ErrorKind::NotADirectory => format!("not a folder: {shown}"),
        _ => format!("cannot open {shown}: {error}"),
    })
}

fn outside_through_symlink(shown: &str) -> ToolError {
    ToolError::new(format!(
        "path {shown:?} is outside the workspace (it leads out through a symlink)"
    ))
}

fn not_regular(shown: &str) -> ToolError {
    ToolError::new(format!(
        "{shown} is not a regular file or folder (FIFOs, sockets and devices are not read)"
    ))
}

/// The one spelling of a workspace path that hooks see and tools use: relative, `/`-separated,
/// no `.` parts, no empty parts (`//`), no trailing `/`; the root is `.`. `..`, absolute paths
/// and NUL bytes are refused here, before any hook or tool sees them.
pub(super) fn normalize(relative: &str) -> Result<String, ToolError> {
    if relative.contains('\0') {
        return Err(ToolError::new(format!(
            "path {relative:?} contains a NUL byte"
        )));
    }
    if relative.starts_with('/') {
        return Err(ToolError::new(format!(
            "path {relative:?} is outside the workspace (use a path relative to the workspace)"
        )));
    }
    let mut parts = Vec::new();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                return Err(ToolError::new(format!(
                    "path {relative:?} is outside the workspace ('..' is not allowed)"
                )))
            }
            part => parts.push(part),
        }
    }
    Ok(if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    })
}

/// Whether `relative` can only name a folder: it ends in `/` or in a `.` part (`a/`, `a/.`).
pub(super) fn names_a_folder(relative: &str) -> bool {
    relative.ends_with('/') || relative == "." || relative.ends_with("/.")
}

/// `openat2(RESOLVE_BENEATH)` from the root: the kernel resolves the whole path and refuses to
/// leave the root, so there is no window between a check and the open.
#[cfg(target_os = "linux")]
mod beneath {
    use std::fs::File;
    use std::os::fd::AsRawFd;
    use std::path::Path;

    use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;

    use super::Kind;

    pub(super) enum Opened {
        File(File, Kind),
        /// A FIFO, socket or device: looked at (`O_PATH`), never opened.
        Special,
    }

    pub(super) enum Error {
        /// No `openat2` here (old kernel, or a seccomp filter that forbids it).
        Unsupported,
        /// The path leads out of the root (a symlink, or a magic link).
        Outside,
        Io(std::io::Error),
    }

    pub(super) fn open(root: &Path, relative: &Path) -> Result<Opened, Error> {
        let flags = OFlags::PATH | OFlags::CLOEXEC;
        let root_fd = rustix::fs::open(root, flags | OFlags::DIRECTORY, Mode::empty())
            .map_err(|e| Error::Io(e.into()))?;
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        let beneath = |path: &Path| {
            let path = if path.as_os_str().is_empty() {
                Path::new(".")
            } else {
                path
            };
            rustix::fs::openat2(&root_fd, path, flags, Mode::empty(), resolve)
        };
        let handle = match beneath(relative) {
            Ok(handle) => handle,
            Err(Errno::NOSYS | Errno::PERM) => return Err(Error::Unsupported),
            // RESOLVE_BENEATH refuses every absolute symlink, even one that points back inside.
            // Such a link is resolved by name (lstat and readlink: nothing is opened) and the
            // result opened beneath the root again, so a link swapped in meanwhile still fails.
            Err(Errno::XDEV) => match root.join(relative).canonicalize() {
                Ok(real) => match real.strip_prefix(root) {
                    Ok(inside) => match beneath(inside) {
                        Ok(handle) => handle,
                        Err(Errno::XDEV | Errno::LOOP) => return Err(Error::Outside),
                        Err(errno) => return Err(Error::Io(errno.into())),
                    },
                    Err(_) => return Err(Error::Outside),
                },
                Err(error) => return Err(Error::Io(error)),
            },
            Err(Errno::LOOP) => return Err(Error::Outside),
            Err(errno) => return Err(Error::Io(errno.into())),
        };
        let stat = rustix::fs::fstat(&handle).map_err(|e| Error::Io(e.into()))?;
        let kind = match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            _ => return Ok(Opened::Special),
        };
        // Reopen the very inode the O_PATH handle holds, now for reading (through procfs: the
        // handle pins the inode, so no rename or symlink swap can change what is opened).
        let proc_path = format!("/proc/self/fd/{}", handle.as_raw_fd());
        let file = File::open(proc_path).map_err(Error::Io)?;
        Ok(Opened::File(file, kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, Workspace) {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("in.txt"), "inside").unwrap();
        std::fs::create_dir(root.path().join("sub")).unwrap();
        std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
        let ws = Workspace::new(root.path()).unwrap();
        (root, outside, ws)
    }

    #[test]
    fn escapes_are_refused() {
        let (root, outside, ws) = setup();
        for path in ["../x", "sub/../../x", "/etc/passwd", "sub/.."] {
            let error = ws.open(path).unwrap_err();
            assert!(error.contains("outside the workspace"), "{path}: {error}");
        }
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.path().join("link"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("dirlink")).unwrap();
        assert!(ws
            .open("link")
            .unwrap_err()
            .contains("outside the workspace"));
        assert!(ws
            .open("dirlink/secret.txt")
            .unwrap_err()
            .contains("outside the workspace"));
        assert!(ws
            .open("dirlink")
            .unwrap_err()
            .contains("outside the workspace"));
    }

    #[test]
    fn links_inside_are_fine() {
        let (root, _outside, ws) = setup();
        std::os::unix::fs::symlink(root.path().join("in.txt"), root.path().join("alias")).unwrap();
        std::fs::hard_link(root.path().join("in.txt"), root.path().join("hard")).unwrap();
        assert_eq!(ws.open("alias").unwrap().1, Kind::File);
        assert_eq!(ws.open("hard").unwrap().1, Kind::File);
        assert_eq!(ws.open("sub").unwrap().1, Kind::Dir);
        assert_eq!(ws.open("./sub/").unwrap().1, Kind::Dir);
    }

    #[test]
    fn fifos_are_refused_without_hanging_and_missing_files_named() {
        let (root, _outside, ws) = setup();
        let fifo = root.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let error = ws.open("pipe").unwrap_err();
        assert!(error.contains("not a regular file"), "{error}");
        assert_eq!(
            ws.open("nope.txt").unwrap_err(),
            "no such file or directory: nope.txt"
        );
    }

    #[test]
    fn one_spelling_for_every_path() {
        for (sent, normal) in [
            (".env", ".env"),
            ("./.env", ".env"),
            (".env/", ".env"),
            (".env/.", ".env"),
            ("./.env//", ".env"),
            ("a//b/./c/", "a/b/c"),
            ("", "."),
            ("./", "."),
        ] {
            assert_eq!(normalize(sent).unwrap(), normal, "{sent:?}");
        }
        for sent in ["..", "a/../b", "/etc/passwd", "a\0b"] {
            assert!(normalize(sent).is_err(), "{sent:?}");
        }
        assert!(names_a_folder(".env/") && names_a_folder(".env/.") && names_a_folder("."));
        assert!(!names_a_folder(".env") && !names_a_folder("./.env"));
    }

    /// The FIFO is watched with inotify: a refused symlink must not have opened it (opening a
    /// FIFO wakes a writer blocked on it). Our own open afterwards proves the watch works.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_symlink_to_a_fifo_outside_is_refused_before_the_fifo_is_opened() {
        use rustix::fs::inotify;
        let (root, outside, ws) = setup();
        let fifo = outside.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        std::os::unix::fs::symlink(&fifo, root.path().join("pipe-link")).unwrap();
        let watch =
            inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK).unwrap();
        inotify::add_watch(&watch, &fifo, inotify::WatchFlags::OPEN).unwrap();

        let error = ws.open("pipe-link").unwrap_err();
        assert!(error.contains("outside the workspace"), "{error}");
        let inside = root.path().join("pipe");
        assert!(std::process::Command::new("mkfifo")
            .arg(&inside)
            .status()
            .unwrap()
            .success());
        inotify::add_watch(&watch, &inside, inotify::WatchFlags::OPEN).unwrap();
        let error = ws.open("pipe").unwrap_err();
        assert!(error.contains("not a regular file"), "{error}");

        drop(open_nonblocking(&fifo).unwrap()); // the one open the watch must see
        let mut buffer = [std::mem::MaybeUninit::uninit(); 1024];
        let mut events = inotify::Reader::new(&watch, &mut buffer);
        let mut opens = 0;
        while let Ok(event) = events.next() {
            assert!(event.events().contains(inotify::ReadFlags::OPEN));
            opens += 1;
        }
        assert_eq!(opens, 1, "only the test's own open of the FIFO");
    }
}

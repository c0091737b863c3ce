//! The workspace sandbox: every tool path is resolved against one root, and every file or folder
//! is verified *after* it was opened, so a symlink swapped in during a call cannot win the race.
//!
//! Rules: paths are relative; absolute paths and `..` components are refused outright; the opened
//! file must lie under the root (checked through `/proc/self/fd` on Linux, by device and inode
//! elsewhere); only regular files and folders are read — FIFOs (opened non-blocking, so they
//! cannot hang a call), sockets and devices are refused. A hard link inside the workspace is an
//! ordinary file of it.

use std::fs::File;
use std::path::{Component, Path, PathBuf};

/// A tool failure, shown to the model as an error result.
pub type ToolError = String;

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

/// What an opened path turned out to be.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Kind {
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

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The lexical path of `relative` under the root, refusing absolute paths and `..`.
    pub fn resolve(&self, relative: &str) -> Result<PathBuf, ToolError> {
        if relative.contains('\0') {
            return Err(format!("path {relative:?} contains a NUL byte"));
        }
        let path = Path::new(relative);
        let mut resolved = self.root.clone();
        for component in path.components() {
            match component {
                Component::Normal(part) => resolved.push(part),
                Component::CurDir => {}
                Component::ParentDir => return Err(format!("path {relative:?} is outside the workspace ('..' is not allowed)")),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(format!("path {relative:?} is outside the workspace (use a path relative to the workspace)"))
                }
            }
        }
        Ok(resolved)
    }

    /// Opens `relative` and proves the opened file is inside the root and is a regular file or a
    /// folder.
    pub fn open(&self, relative: &str) -> Result<(File, Kind), ToolError> {
        let path = self.resolve(relative)?;
        self.open_path(&path, relative)
    }

    /// Like [`Workspace::open`] for a path already under the root (from a directory walk).
    pub fn open_path(&self, path: &Path, shown: &str) -> Result<(File, Kind), ToolError> {
        let file = open_nonblocking(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("no such file or directory: {shown}"),
            std::io::ErrorKind::PermissionDenied => format!("permission denied: {shown}"),
            _ => format!("cannot open {shown}: {e}"),
        })?;
        if !self.contains_opened(&file, path)? {
            return Err(format!(
                "path {shown:?} is outside the workspace (it leads out through a symlink)"
            ));
        }
        let metadata = file
            .metadata()
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        let kind = if metadata.is_file() {
            Kind::File
        } else if metadata.is_dir() {
            Kind::Dir
        } else {
            return Err(format!(
                "{shown} is not a regular file or folder (FIFOs, sockets and devices are not read)"
            ));
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
    pub fn opened_dir_path(&self, dir: &File, _path: &Path) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()))
    }

    #[cfg(not(target_os = "linux"))]
    pub fn opened_dir_path(&self, _dir: &File, path: &Path) -> PathBuf {
        path.to_path_buf()
    }

    /// `path` relative to the root, with `/`, for showing to the model.
    pub fn display(&self, path: &Path) -> String {
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
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
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
}

//! What the I/O benchmark needs to know about the machine and the directories it
//! tests: memory (to size vectors), free space, the file system and the block device
//! under each directory (to read its counters from `/proc/diskstats`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::IoBenchError;

/// Memory, name and platform of the machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// Host name (names the result files, as Nano's do).
    pub host: String,
    /// kdb+'s platform code for the `os` column (`l64`, `l64arm`, `m64`).
    pub os: &'static str,
    /// Physical memory in bytes (`MemTotal`).
    pub mem_total: u64,
    /// Memory available without swapping in bytes (`MemAvailable`).
    pub mem_available: u64,
    /// Logical cores.
    pub cores: usize,
}

impl Machine {
    /// Reads `/proc/meminfo` and the host name.
    pub fn probe() -> Result<Machine, IoBenchError> {
        let meminfo = read_text(Path::new("/proc/meminfo"))?;
        let field = |name: &str| {
            meminfo
                .lines()
                .find_map(|l| l.strip_prefix(name)?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
                .map(|kib| kib * 1024)
                .ok_or_else(|| IoBenchError::Invalid(format!("/proc/meminfo: no {name} line in kB")))
        };
        let host = read_text(Path::new("/proc/sys/kernel/hostname"))
            .map(|h| h.trim().to_string())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_string());
        let os = match (std::env::consts::OS, std::env::consts::ARCH) {
            ("macos", _) => "m64",
            (_, "aarch64") => "l64arm",
            _ => "l64",
        };
        Ok(Machine {
            host,
            os,
            mem_total: field("MemTotal:")?,
            mem_available: field("MemAvailable:")?,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        })
    }
}

/// A directory under test: its file system, block device and free space.
#[derive(Clone, Debug, PartialEq)]
pub struct Root {
    /// The directory as given.
    pub path: PathBuf,
    /// File-system type from the mount table (`ext4`, `xfs`, `tmpfs`, ...).
    pub fs_type: String,
    /// What is mounted there (`/dev/nvme0n1p1`, `tmpfs`, ...).
    pub source: String,
    /// The `/proc/diskstats` name of the device holding the directory, if it has one
    /// (tmpfs and some network or union file systems do not).
    pub device: Option<String>,
    /// Bytes an unprivileged writer may still use.
    pub free_bytes: u64,
}

impl Root {
    /// Creates `path` if needed and finds its mount and device.
    pub fn probe(path: &Path) -> Result<Root, IoBenchError> {
        std::fs::create_dir_all(path).map_err(|e| IoBenchError::io(path, e))?;
        let canonical = path.canonicalize().map_err(|e| IoBenchError::io(path, e))?;
        let dev = std::fs::metadata(&canonical).map_err(|e| IoBenchError::io(path, e))?.dev();
        let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
        let vfs = rustix::fs::statvfs(&canonical).map_err(|e| IoBenchError::io(path, e.into()))?;
        let (fs_type, source) = read_text(Path::new("/proc/self/mountinfo"))
            .ok()
            .and_then(|text| mount_of(&text, &canonical))
            .unwrap_or_else(|| ("unknown".into(), "unknown".into()));
        let device = read_text(Path::new("/proc/diskstats")).ok().and_then(|text| device_name(&text, major, minor));
        Ok(Root {
            path: path.to_path_buf(),
            fs_type,
            source,
            device,
            free_bytes: vfs.f_bavail.saturating_mul(vfs.f_frsize),
        })
    }

    /// Whether the file system keeps files in memory, so no read from it is cold.
    pub fn in_memory(&self) -> bool {
        matches!(self.fs_type.as_str(), "tmpfs" | "ramfs")
    }
}

/// The file-system type and source of the mount holding `path`: the entry of
/// `/proc/self/mountinfo` text with the longest mount point that contains it.
pub fn mount_of(mountinfo: &str, path: &Path) -> Option<(String, String)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mount_point = unescape_mount(left.split(' ').nth(4)?);
            let mut right = right.split(' ');
            let (fs_type, source) = (right.next()?, right.next()?);
            path.starts_with(&mount_point).then(|| (mount_point, fs_type.to_string(), source.to_string()))
        })
        .max_by_key(|(mount_point, ..)| mount_point.components().count())
        .map(|(_, fs_type, source)| (fs_type, source))
}

/// Mount points escape spaces and a few other bytes as `\ooo` octal.
fn unescape_mount(text: &str) -> PathBuf {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal =
            bytes.get(i + 1..i + 4).filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push(d.iter().fold(0u8, |acc, c| acc.wrapping_mul(8).wrapping_add(c - b'0')));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    PathBuf::from(String::from_utf8_lossy(&out).into_owned())
}

/// The `/proc/diskstats` name of device `major:minor`.
pub fn device_name(diskstats: &str, major: u32, minor: u32) -> Option<String> {
    diskstats.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (ma, mi, name) = (fields.next()?, fields.next()?, fields.next()?);
        (ma.parse() == Ok(major) && mi.parse() == Ok(minor)).then(|| name.to_string())
    })
}

fn read_text(path: &Path) -> Result<String, IoBenchError> {
    std::fs::read_to_string(path).map_err(|e| IoBenchError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:26 / /dev/shm rw,nosuid shared:4 - tmpfs tmpfs rw,size=24682416k
31 22 259:1 / /mnt/fast\\040disk rw shared:5 - xfs /dev/nvme0n1p1 rw
";

    #[test]
    fn the_longest_containing_mount_wins() {
        let at = |p: &str| mount_of(MOUNTINFO, Path::new(p)).unwrap();
        assert_eq!(at("/work/main"), ("ext4".into(), "/dev/vda".into()));
        assert_eq!(at("/dev/shm/x"), ("tmpfs".into(), "tmpfs".into()));
        assert_eq!(at("/mnt/fast disk/db"), ("xfs".into(), "/dev/nvme0n1p1".into()));
        assert_eq!(at("/dev/shmx"), ("ext4".into(), "/dev/vda".into()), "components, not string prefixes");
    }

    #[test]
    fn devices_are_found_by_number() {
        let stats = " 254       0 vda 67774 7418 5180706 85446 13798 46930 18134088 69555 0 13936 156559\n";
        assert_eq!(device_name(stats, 254, 0), Some("vda".into()));
        assert_eq!(device_name(stats, 0, 26), None);
    }

    #[test]
    fn this_machine_can_be_probed() {
        let machine = Machine::probe().unwrap();
        assert!(machine.mem_total >= machine.mem_available && machine.mem_available > 0);
        let dir = tempfile::tempdir().unwrap();
        let root = Root::probe(&dir.path().join("new")).unwrap();
        assert!(root.path.ends_with("new") && root.path.is_dir());
        assert!(root.free_bytes > 0 && !root.fs_type.is_empty());
    }
}

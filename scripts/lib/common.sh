# shellcheck shell=bash
# Shared helpers for the scripts in scripts/. Sourced, never run.
#
# Kept small on purpose: logging, finding the Swift toolchain, and reading the
# mount table. Each script stays readable on its own.

# The repository root, whatever directory the script was started from.
# shellcheck disable=SC2034  # used by the scripts that source this file
PURGEFS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# Messages go to stderr so that a script's stdout stays its real output.
say()  { printf '%s\n' "$*" >&2; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }
die()  { printf 'error: %s\n' "$*" >&2; exit 1; }

# The toolchain on these machines lives at /opt/swift but a non-login shell
# (CI, sudo, cron) may not have it on PATH. Add it there rather than fail.
ensure_swift_on_path() {
    if ! command -v swift >/dev/null 2>&1 && [[ -x /opt/swift/usr/bin/swift ]]; then
        export PATH="/opt/swift/usr/bin:$PATH"
    fi
    command -v swift >/dev/null 2>&1
}

# Prints "MOUNTPOINT<TAB>FSTYPE" for every FUSE mount (fstype fuse or fuse.*)
# whose mountpoint is DIR or below it. Reads /proc/self/mountinfo, where the
# mountpoint is field 5 (with spaces escaped as \040) and the filesystem type
# follows the " - " separator.
fuse_mounts_under() {
    local dir="${1%/}"
    awk -v dir="$dir" '
        {
            mp = $5
            gsub(/\\040/, " ", mp); gsub(/\\011/, "\t", mp)
            for (i = 6; i <= NF; i++) if ($i == "-") { fstype = $(i + 1); break }
            if (fstype != "fuse" && fstype !~ /^fuse\./) next
            if (mp == dir || index(mp, dir "/") == 1) print mp "\t" fstype
        }' /proc/self/mountinfo
}

# True when PATH is a mountpoint right now (any filesystem type).
is_mounted() {
    local path="${1%/}"
    awk -v p="$path" '{ mp = $5; gsub(/\\040/, " ", mp); if (mp == p) found = 1 }
                      END { exit !found }' /proc/self/mountinfo
}

# Unmounts a FUSE mount that *this script* made. Tries a clean unmount a few
# times (a just-closed file can keep it busy for a moment), then a lazy one so
# that an exiting script never leaves a mount behind.
unmount_own() {
    local mp="$1"
    is_mounted "$mp" || return 0
    for _ in 1 2 3 4 5; do
        fusermount3 -u "$mp" 2>/dev/null && return 0
        is_mounted "$mp" || return 0
        sleep 0.2
    done
    warn "$mp still busy; detaching it lazily (fusermount3 -u -z)"
    fusermount3 -u -z "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || true
}

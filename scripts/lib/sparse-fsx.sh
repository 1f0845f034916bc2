#!/usr/bin/env bash
# sparse-fsx.sh CONTAINER MNT TAG clone|original SEED FLAGS...: fsx on a
# linked clone's member that block sharing made sparse (docs/DESIGN.md,
# "Block sharing without reflinks"), on a mount started with
# block sharing on (the default). Makes MNT/F-TAG (SIZE_MIB, 64 MiB unless set, of random bytes) and
# MNT/C-TAG (`cp`, a linked clone), writes one 4 KiB block into the clone
# (its first write: it becomes sparse), then runs fsx -k (the file kept, its
# content the reference) on the clone (`clone`) or on the original while
# the sparse clone exists (`original`; afterwards the clone must still read
# its own bytes). Prints the clone's backing size and st_blocks and the
# block-maps journal's size before and after, for the evidence that fsx ran
# on a sparse member. FSX names the fsx binary (xfstests' ltp/fsx), OPS the
# operations (500,000). fsx's fallocate calls but punching flatten a sparse
# member (its map dropped), and so does its start-up probe: pass -F -K -u -z
# -C -I to keep the member sparse. Exit status: fsx's, or 3 when the clone reads wrong.
set -u
container="$1"; mnt="$2"; tag="$3"; target="$4"; seed="$5"; shift 5
logs="${LOGS:-$PWD}"; mkdir -p "$logs"
f="F-$tag"; c="C-$tag"; ref="$logs/$c.expected"
head -c $((${SIZE_MIB:-64} << 20)) /dev/urandom > "$mnt/$f" && sync -f "$mnt/$f" || exit 2
cp "$mnt/$f" "$mnt/$c" || exit 2
cp "$mnt/$f" "$ref"
# The clone's first write: one block at 1 MiB, synced (the start and own records journaled).
head -c 4096 /dev/urandom > "$logs/$c.block"
dd if="$logs/$c.block" of="$mnt/$c" bs=4096 seek=256 conv=notrunc,fsync status=none || exit 2
dd if="$logs/$c.block" of="$ref" bs=4096 seek=256 conv=notrunc status=none
cmp "$mnt/$c" "$ref" || exit 3
evidence() {
    echo "$1: $(stat -c '%n size %s blocks %b (of %B bytes)' "$container/$c")"
    echo "$1: $(stat -c '%n size %s' "$container/.purgefs/block-maps.journal" 2>/dev/null || echo 'no block-maps.journal')"
    echo "$1: clone-anchors: $(cd "$container/.purgefs/clone-anchors" 2>/dev/null && stat -c '%n:%s:%b' * 2>/dev/null | tr '\n' ' ')"
}
evidence before
case "$target" in clone) file="$mnt/$c" ;; original) file="$mnt/$f" ;; *) exit 2 ;; esac
exec 3<"$file"   # a reader held, as /work/fsx-run.sh does
echo "${FSX:-/work/nr-fsx/fsx} -q -k -N ${OPS:-500000} -S $seed -P $logs $* $file"
"${FSX:-/work/nr-fsx/fsx}" -q -k -N "${OPS:-500000}" -S "$seed" -P "$logs" "$@" "$file" > "$logs/fsx-$tag.out" 2>&1
status=$?
exec 3<&-
tail -3 "$logs/fsx-$tag.out"
evidence after
if [ "$target" = original ]; then
    cmp "$mnt/$c" "$ref" && echo "the sparse clone $c still reads its own bytes" || { echo "MISMATCH: $c"; status=3; }
fi
exit "$status"

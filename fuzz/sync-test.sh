#!/bin/sh
# sync-test.sh — two instance groups, as two machines would run them, share one FUZZ_SYNC_DIR:
# group a (FUZZ_ROLE=main: AFL++'s -M main) and group b (FUZZ_ROLE=secondary: -S b-s0), each a
# campaign.sh of its own. Passes when each group's queue holds entries imported from the other
# (AFL++ names them sync:<instance>) and fuzz-cmin's merge reads both groups' queues.
#
#   fuzz/sync-test.sh [HARNESS]     (default jinja; FUZZ_SECONDS per group, default 120)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
H=${1:-jinja}
SECS=${FUZZ_SECONDS:-120}
# Inside the tree: afl-cmin refuses /tmp.
DIR="$ROOT/fuzz/out/sync-test"
rm -rf "$DIR"
mkdir -p "$DIR"
# Import every minute (AFL++'s default is far longer), so a short test sees both directions.
export FUZZ_SYNC_DIR="$DIR/campaign" FUZZ_TARGETS="$H" FUZZ_SECONDS="$SECS" FUZZ_JOBS=1 \
    FUZZ_SYNC_MINUTES=1

# Build once; the two groups then share the binaries (FUZZ_BUILD=0), as machines share nothing
# but the sync directory.
"$ROOT/fuzz/campaign.sh" build >"$DIR/build.log" 2>&1 || { cat "$DIR/build.log"; exit 1; }
FUZZ_BUILD=0 FUZZ_ROLE=main FUZZ_NAME=a "$ROOT/fuzz/campaign.sh" run >"$DIR/a.log" 2>&1 &
a=$!
sleep 5
FUZZ_BUILD=0 FUZZ_ROLE=secondary FUZZ_NAME=b "$ROOT/fuzz/campaign.sh" run >"$DIR/b.log" 2>&1 &
b=$!
wait "$a" || { cat "$DIR/a.log"; exit 1; }
wait "$b" || { cat "$DIR/b.log"; exit 1; }

q="$FUZZ_SYNC_DIR/$H"
from_b=$(find "$q/main/queue" -name 'id:*sync:b-s0*' | wc -l)
from_a=$(find "$q/b-s0/queue" -name 'id:*sync:main*' | wc -l)
own_a=$(find "$q/main/queue" -name 'id:*' ! -name '*sync:*' | wc -l)
own_b=$(find "$q/b-s0/queue" -name 'id:*' ! -name '*sync:*' | wc -l)
echo "sync-test: $H, $SECS s per group: main (group a) queue $own_a own + $from_b from b-s0;" \
    "b-s0 (group b) queue $own_b own + $from_a from main"
FUZZ_BUILD=0 "$ROOT/fuzz/campaign.sh" summary

# The merge: fuzz-cmin's input holds both groups' queues (it writes to the test's directory,
# not to fuzz/corpus/).
FUZZ_BUILD=0 FUZZ_CMIN_DEST="$DIR/merged" "$ROOT/fuzz/campaign.sh" cmin >"$DIR/cmin.log" 2>&1 ||
    { cat "$DIR/cmin.log"; exit 1; }
in_a=$(find "$ROOT/fuzz/out/cmin-in-$H" -name 'main-id:*' | wc -l)
in_b=$(find "$ROOT/fuzz/out/cmin-in-$H" -name 'b-s0-id:*' | wc -l)
merged=$(find "$DIR/merged/$H" -type f | wc -l)
echo "sync-test: fuzz-cmin read $in_a entries of main and $in_b of b-s0, kept $merged"

fail=0
[ "$from_b" -gt 0 ] || { echo "sync-test: group a imported nothing from group b" >&2; fail=1; }
[ "$from_a" -gt 0 ] || { echo "sync-test: group b imported nothing from group a" >&2; fail=1; }
[ "$in_a" -gt 0 ] && [ "$in_b" -gt 0 ] || { echo "sync-test: the merge missed a group" >&2; fail=1; }
[ "$merged" -gt 0 ] || { echo "sync-test: the merge kept nothing" >&2; fail=1; }
# Names: every named corpus input (a model's template, a seed) is in the merge, byte for byte;
# every other merged input is numbered, none keeps AFL++'s id:… name.
for f in "$ROOT/fuzz/corpus/$H"/*; do
    case ${f##*/} in *[!0-9]*) ;; *) continue ;; esac
    cmp -s "$f" "$DIR/merged/$H/${f##*/}" ||
        { echo "sync-test: the merge lost the named input ${f##*/}" >&2; fail=1; }
done
odd=$(find "$DIR/merged/$H" -type f -name '*id:*' | wc -l)
[ "$odd" = 0 ] || { echo "sync-test: $odd merged inputs kept a queue name" >&2; fail=1; }
[ "$fail" = 0 ] && echo "sync-test: passed"
exit "$fail"

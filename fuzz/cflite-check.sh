#!/bin/bash
# cflite-check.sh — runs .clusterfuzzlite/build.sh here as ClusterFuzzLite's default build does
# (libFuzzer + AddressSanitizer: the service's CC, CFLAGS, LIB_FUZZING_ENGINE and OUT), then
# checks what it left in $OUT and runs every target the way the service's runner would: from
# $OUT alone (no LD_LIBRARY_PATH), over its seed corpus (fuzz_<name>_seed_corpus.zip) with its
# dictionary, then a short fuzzing run. `make fuzz-cflite`; exit 0 when every target passes.
#
# Environment: CFLITE_DIR (default build-cflite-check/), CFLITE_SECONDS (the fuzzing run per
# target after the corpus, 10).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=${CFLITE_DIR:-$ROOT/build-cflite-check}
SECS=${CFLITE_SECONDS:-10}
mkdir -p "$T"
T=$(cd "$T" && pwd)
rm -rf "$T/out"
mkdir -p "$T/out" "$T/work"

# OSS-Fuzz's flags for -e SANITIZER=address -e FUZZING_ENGINE=libfuzzer (infra/base-images).
export CC=clang CXX=clang++
export CFLAGS="-O1 -fno-omit-frame-pointer -gline-tables-only -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -fsanitize=address -fsanitize-address-use-after-scope -fsanitize=fuzzer-no-link"
export CXXFLAGS="$CFLAGS" LIB_FUZZING_ENGINE=-fsanitize=fuzzer OUT="$T/out" WORK="$T/work"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
unset PLUMB_KERNELS PLUMB_THREADS LD_LIBRARY_PATH

start=$(date +%s)
bash "$ROOT/.clusterfuzzlite/build.sh" >"$T/build.log" 2>&1 || {
    tail -30 "$T/build.log"
    echo "cflite-check: build.sh failed (log: $T/build.log)" >&2
    exit 1
}
echo "cflite-check: build.sh built the targets in $(($(date +%s) - start)) s"

fail=0
for src in "$ROOT"/fuzz/fuzz_*.c; do
    h=$(basename "$src" .c)
    h=${h#fuzz_}
    bin="$OUT/fuzz_$h"
    zip="$OUT/fuzz_${h}_seed_corpus.zip"
    [ -x "$bin" ] || { echo "cflite-check: $bin missing" >&2; fail=1; continue; }
    [ -s "$zip" ] || { echo "cflite-check: $zip missing" >&2; fail=1; continue; }
    # Every shared library resolves, and the ones that are not the C runtime's come from $OUT/lib.
    bad=$(ldd "$bin" | awk -v out="$OUT/lib/" '
        /not found/ { print; next }
        $2 == "=>" && $3 ~ /^\// && index($3, out) != 1 &&
            $1 !~ /^(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+)\.so/ { print }')
    [ -z "$bad" ] || { echo "cflite-check: fuzz_$h needs libraries outside \$OUT: $bad" >&2; fail=1; }
    seeds="$T/seeds/$h"
    rm -rf "$seeds" "$T/new/$h"
    mkdir -p "$seeds" "$T/new/$h"
    unzip -q "$zip" -d "$seeds"
    n=$(find "$seeds" -type f | wc -l)
    dict=()
    [ ! -f "$OUT/fuzz_$h.dict" ] || dict=(-dict="$OUT/fuzz_$h.dict")
    # -runs=0: every seed once (libFuzzer's INITED line), no mutation.
    if ! "$bin" "${dict[@]}" -runs=0 "$seeds" >"$T/$h.replay.log" 2>&1; then
        tail -20 "$T/$h.replay.log"
        echo "cflite-check: fuzz_$h failed on its seed corpus (log: $T/$h.replay.log)" >&2
        fail=1
        continue
    fi
    grep -q "INITED" "$T/$h.replay.log" || { echo "cflite-check: fuzz_$h never reached INITED" >&2; fail=1; continue; }
    if ! "$bin" "${dict[@]}" -max_total_time="$SECS" -seed=1 "$T/new/$h" "$seeds" >"$T/$h.fuzz.log" 2>&1; then
        tail -20 "$T/$h.fuzz.log"
        echo "cflite-check: fuzz_$h failed while fuzzing (log: $T/$h.fuzz.log)" >&2
        fail=1
        continue
    fi
    printf 'cflite-check: fuzz_%-12s %5d seeds: %s\n' "$h" "$n" \
        "$(grep -o 'INITED cov: [0-9]* ft: [0-9]*' "$T/$h.replay.log" | head -1)"
done
[ "$fail" = 0 ] && echo "cflite-check: every target builds, replays its seeds and fuzzes from \$OUT"
exit "$fail"

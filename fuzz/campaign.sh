#!/bin/sh
# campaign.sh — the `make fuzz` driver: builds the AFL++ variants of each harness, runs
# time-boxed campaigns (a main and a secondary instance), prints the summary table, copies
# findings out; also replays, minimizes and (re)generates the corpora. Not a CI script: the
# replay in ctest (label fuzz-replay) is what CI runs.
#
#   fuzz/campaign.sh [all]   build + run + summary (make fuzz)
#   fuzz/campaign.sh build   the three AFL++ builds      run      the campaigns only
#   fuzz/campaign.sh summary the table of the last run  replay   the replay drivers (make fuzz-replay)
#   fuzz/campaign.sh cmin    afl-cmin every corpus      seeds    regenerate corpora from synth/
#
# Environment: FUZZ_TARGETS (default: every harness), FUZZ_SECONDS per harness (600),
# FUZZ_JOBS instances per harness (2: -M with CMPLOG, -S on the ASan/UBSan build),
# FUZZ_HARNESSES (the full list; default: every fuzz/fuzz_<name>.c), FUZZ_CMIN_MAX_BYTES
# (queue entries larger than this stay out of the corpus; 8192).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FUZZ="$ROOT/fuzz"
HARNESSES=${FUZZ_HARNESSES:-$(cd "$FUZZ" && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//' | tr '\n' ' ')}
TARGETS=${FUZZ_TARGETS:-$HARNESSES}
SECONDS_EACH=${FUZZ_SECONDS:-600}
JOBS=${FUZZ_JOBS:-2}
OUT=${FUZZ_OUT:-"$FUZZ/out"}
# Per-harness builds: the harnesses that drive the SIMD kernel sets (KERNEL_HARNESSES: the
# quantized matmuls, the sampler's primitives, and the GGUF loader whose tensors the fast sets
# repack) are built with every set; the parser harnesses (tokenizer, jinja, http, chat,
# safetensors) with the reference set only (-DPLUMB_X86_SETS=OFF -DPLUMB_WASM128=OFF): they never
# reach the SIMD files in a way that matters, and compiling those through AFL++ was most of the
# build time. One build tree per group and variant, build-fuzz-afl[-asan|-cmplog]-{kernels,parsers},
# kept and reused across campaigns.
KERNEL_HARNESSES=${FUZZ_KERNEL_HARNESSES:-"quant sampler gguf"}
group_of() { case " $KERNEL_HARNESSES " in *" $1 "*) echo kernels ;; *) echo parsers ;; esac; }
afl_dir() { echo "$ROOT/build-fuzz-afl${2:+-$2}-$(group_of "$1")"; } # harness [asan|cmplog]
B_REPLAY="$ROOT/build-fuzz"
MAX_BYTES=${FUZZ_CMIN_MAX_BYTES:-8192}
NPROC=$(nproc 2>/dev/null || echo 2)

# Containers: core_pattern and the CPU governor cannot be changed, other jobs share the
# cores, and nobody watches a UI.
export AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 \
    AFL_NO_UI=1 AFL_FAST_CAL=1 AFL_CMPLOG_ONLY_NEW=1 AFL_NO_WARN_INSTABILITY=1 \
    AFL_IGNORE_SEED_PROBLEMS=1 AFL_SKIP_CRASHES=1
# Sanitizer builds: abort so AFL++ sees a crash; no leak check at exit in the fuzzers (the
# replay driver under ASan has it).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:symbolize=0:detect_leaks=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
export PLUMB_KERNELS= PLUMB_THREADS=1
unset PLUMB_KERNELS

targets_list() { for h in $TARGETS; do printf 'fuzz_%s ' "$h"; done; }
group_targets() { for h in $TARGETS; do [ "$(group_of "$h")" = "$1" ] && printf 'fuzz_%s ' "$h"; done; true; }

configure() { # dir, targets, extra cmake options, then env assignments for the compiler wrapper
    dir=$1
    targets=$2
    opts=$3
    shift 3
    env "$@" cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DPLUMB_BUILD_TESTS=OFF -DCMAKE_PROJECT_INCLUDE="$FUZZ/standalone.cmake" \
        -DCMAKE_C_COMPILER=afl-clang-fast $opts >/dev/null
    env "$@" cmake --build "$dir" -j "$NPROC" --target $targets >/dev/null
}

build() {
    command -v afl-clang-fast >/dev/null || { echo "campaign: afl-clang-fast not found (make deps)"; exit 1; }
    for g in parsers kernels; do
        t=$(group_targets $g)
        t=${t% }
        [ -n "$t" ] || continue
        opts="-DPLUMB_X86_SETS=ON" what="every kernel set"
        [ $g = kernels ] || opts="-DPLUMB_X86_SETS=OFF -DPLUMB_WASM128=OFF" what="ref kernels only"
        echo "campaign: building AFL++ harnesses ($t; $what): plain, ASan/UBSan, CMPLOG"
        h=${t%% *}
        h=${h#fuzz_}
        configure "$(afl_dir "$h")" "$t" "$opts"
        configure "$(afl_dir "$h" asan)" "$t" "$opts" AFL_USE_ASAN=1 AFL_USE_UBSAN=1
        configure "$(afl_dir "$h" cmplog)" "$t" "$opts" AFL_LLVM_CMPLOG=1
    done
}

replay_build() {
    cmake -S "$ROOT" -B "$B_REPLAY" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_PROJECT_INCLUDE="$FUZZ/standalone.cmake" >/dev/null
    cmake --build "$B_REPLAY" -j "$NPROC" --target $(targets_list) fuzz_mkseeds >/dev/null
}

dict_opt() { [ -f "$FUZZ/dict/$1.dict" ] && printf -- '-x %s' "$FUZZ/dict/$1.dict" || true; }

run_one() {
    h=$1
    o="$OUT/$h"
    rm -rf "$o"
    mkdir -p "$o"
    in="$FUZZ/corpus/$h"
    [ -n "$(ls "$in" 2>/dev/null)" ] || { echo "campaign: $in is empty (fuzz/campaign.sh seeds)"; exit 1; }
    echo "campaign: $h for ${SECONDS_EACH}s with $JOBS instance(s) -> $o"
    afl-fuzz -M main -i "$in" -o "$o" $(dict_opt "$h") -m none -t 1000+ -V "$SECONDS_EACH" \
        -c "$(afl_dir "$h" cmplog)/fuzz/fuzz_$h" -- "$(afl_dir "$h")/fuzz/fuzz_$h" >"$o/main.log" 2>&1 &
    pids=$!
    j=1
    while [ "$j" -lt "$JOBS" ]; do
        if [ "$j" = 1 ]; then bin="$(afl_dir "$h" asan)/fuzz/fuzz_$h"; else bin="$(afl_dir "$h")/fuzz/fuzz_$h"; fi
        sleep 2
        afl-fuzz -S "s$j" -i "$in" -o "$o" $(dict_opt "$h") -m none -t 2000+ -V "$SECONDS_EACH" \
            -- "$bin" >"$o/s$j.log" 2>&1 &
        pids="$pids $!"
        j=$((j + 1))
    done
    rc=0
    for p in $pids; do wait "$p" || rc=1; done
    [ "$rc" = 0 ] || echo "campaign: an instance of $h exited with an error (see $o/*.log)"
    collect "$h"
}

# Crashes and hangs -> fuzz/findings/<harness>/ with a one-line repro each.
collect() {
    h=$1
    dst="$FUZZ/findings/$h"
    n=0
    for f in "$OUT/$h"/*/crashes/id:* "$OUT/$h"/*/hangs/id:*; do
        [ -f "$f" ] || continue
        mkdir -p "$dst"
        inst=$(basename "$(dirname "$(dirname "$f")")")
        kind=$(basename "$(dirname "$f")")
        name="$inst-$kind-$(basename "$f" | cut -d, -f1 | tr ':' '_')"
        cp "$f" "$dst/$name"
        echo "$B_REPLAY/fuzz/fuzz_$h fuzz/findings/$h/$name   # or build-fuzz-asan/fuzz/fuzz_$h" >>"$dst/REPRO"
        n=$((n + 1))
    done
    [ "$n" = 0 ] || echo "campaign: $n finding(s) of $h copied to fuzz/findings/$h (see REPRO)"
}

stat_of() { sed -n "s/^$2 *: *//p" "$1" 2>/dev/null | head -n 1; }

summary() {
    printf '%-10s %5s %9s %12s %12s %7s %13s %7s %5s\n' harness inst cpu_min execs/s total_execs corpus edges crashes hangs
    for h in $TARGETS; do
        execs=0 eps=0 corpus=0 crashes=0 hangs=0 cpu=0 n=0 edges=- cov=
        for s in "$OUT/$h"/*/fuzzer_stats; do
            [ -f "$s" ] || continue
            n=$((n + 1))
            e=$(stat_of "$s" execs_done)
            execs=$((execs + ${e:-0}))
            st=$(stat_of "$s" start_time)
            lu=$(stat_of "$s" last_update)
            cpu=$((cpu + ${lu:-0} - ${st:-0}))
            c=$(stat_of "$s" corpus_count)
            [ -n "$c" ] || c=$(stat_of "$s" paths_total)
            [ "${c:-0}" -gt "$corpus" ] && corpus=$c
            cr=$(stat_of "$s" saved_crashes)
            [ -n "$cr" ] || cr=$(stat_of "$s" unique_crashes)
            crashes=$((crashes + ${cr:-0}))
            hg=$(stat_of "$s" saved_hangs)
            [ -n "$hg" ] || hg=$(stat_of "$s" unique_hangs)
            hangs=$((hangs + ${hg:-0}))
            if [ "$(basename "$(dirname "$s")")" = main ]; then
                edges="$(stat_of "$s" edges_found)/$(stat_of "$s" total_edges)"
                cov=$(stat_of "$s" bitmap_cvg)
            fi
        done
        [ "$n" -gt 0 ] || continue
        [ "$cpu" -gt 0 ] && eps=$((execs / cpu * n)) || eps=0
        printf '%-10s %5s %9s %12s %12s %7s %13s %7s %5s\n' "$h" "$n" \
            "$(awk "BEGIN{printf \"%.1f\", $cpu/60}")" "$eps" "$execs" "$corpus" "$edges" "$crashes" "$hangs"
        [ -z "$cov" ] || echo "           main instance bitmap coverage: $cov"
    done
    echo "(execs/s: total over instances, per wall second; cpu_min: instance-minutes; corpus: the largest instance's queue)"
}

replay() {
    replay_build
    rc=0
    for h in $TARGETS; do
        "$B_REPLAY/fuzz/fuzz_$h" "$FUZZ/corpus/$h" "$FUZZ/regressions/$h" || rc=1
    done
    return $rc
}

cmin_one() { # harness, input dir -> fuzz/corpus/<harness>
    h=$1
    tmp="$OUT/cmin-$h"
    rm -rf "$tmp"
    afl-cmin -i "$2" -o "$tmp" -m none -t 5000 -- "$(afl_dir "$h")/fuzz/fuzz_$h" >"$OUT/cmin-$h.log" 2>&1 || {
        echo "campaign: afl-cmin of $h failed (see $OUT/cmin-$h.log)"
        return 1
    }
    find "$FUZZ/corpus/$h" -type f ! -name '.*' -delete
    mkdir -p "$FUZZ/corpus/$h"
    i=0
    for f in "$tmp"/*; do
        cp "$f" "$FUZZ/corpus/$h/$(printf '%03d' $i)"
        i=$((i + 1))
    done
    echo "campaign: corpus/$h: $i inputs, $(du -sh "$FUZZ/corpus/$h" | cut -f1)"
}

cmin() { # the corpus plus the last campaign's queues, minimized
    mkdir -p "$OUT"
    for h in $TARGETS; do
        all="$OUT/cmin-in-$h"
        rm -rf "$all"
        mkdir -p "$all"
        find "$FUZZ/corpus/$h" -type f ! -name '.*' -exec cp {} "$all/" \;
        for q in "$OUT/$h"/*/queue; do
            [ -d "$q" ] || continue
            inst=${q%/queue}
            inst=${inst##*/}
            # Big queue entries would bloat the checked-in corpus (FUZZ_CMIN_MAX_BYTES).
            find "$q" -maxdepth 1 -type f -name 'id:*' -size -$((MAX_BYTES + 1))c -exec \
                sh -c 'd=$1; p=$2; shift 2; for f; do cp "$f" "$d/$p-${f##*/}"; done' sh "$all" "$inst" {} +
        done
        cmin_one "$h" "$all"
    done
}

seeds() {
    replay_build
    build
    s="$OUT/seeds"
    rm -rf "$s"
    mkdir -p "$s"
    "$B_REPLAY/fuzz/fuzz_mkseeds" "$s"
    for h in $TARGETS; do
        [ -d "$s/$h" ] && cmin_one "$h" "$s/$h"
    done
}

case "${1:-all}" in
all) build; for h in $TARGETS; do run_one "$h"; done; summary ;;
build) build ;;
run) for h in $TARGETS; do run_one "$h"; done; summary ;;
summary) summary ;;
replay) replay ;;
cmin) cmin ;;
seeds) seeds ;;
*) echo "usage: $0 [all|build|run|summary|replay|cmin|seeds]"; exit 2 ;;
esac

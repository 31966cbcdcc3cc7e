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
# FUZZ_JOBS instances per harness on this machine (2: the main with CMPLOG, a secondary on the
# ASan/UBSan build; more secondaries use the plain build), FUZZ_HARNESSES (the full list;
# default: every fuzz/fuzz_<name>.c), FUZZ_CMIN_MAX_BYTES (queue entries larger than this stay
# out of the corpus; 8192).
# More than one machine: FUZZ_SYNC_DIR, a directory every machine sees (NFS, a shared volume),
# holds the campaign (<dir>/<harness>/<instance>/, resumed, never wiped); exactly one machine
# runs FUZZ_ROLE=main (the default; its instance 0 is AFL++'s -M main), every other one
# FUZZ_ROLE=secondary (only -S instances); FUZZ_NAME (default: the host name) keeps their
# instance names apart. `make fuzz-cmin` and `summary` then read every machine's instances.
# FUZZ_SYNC_MINUTES: how often an instance imports the others' finds (AFL_SYNC_TIME).
# FUZZ_BUILD=0: use the AFL++ builds as they are (two campaign.sh on one tree must not both
# build it). FUZZ_CMIN_DEST: where cmin writes the minimized corpora (default fuzz/corpus).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FUZZ="$ROOT/fuzz"
HARNESSES=${FUZZ_HARNESSES:-$(cd "$FUZZ" && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//' | tr '\n' ' ')}
TARGETS=${FUZZ_TARGETS:-$HARNESSES}
SECONDS_EACH=${FUZZ_SECONDS:-600}
JOBS=${FUZZ_JOBS:-2}
OUT=${FUZZ_OUT:-"$FUZZ/out"}
# Per-harness instrumentation: a harness instruments what it fuzzes. The kernels group
# (KERNEL_HARNESSES: the quantized matmuls and the sampler's primitives, which drive every kernel
# set) instruments the SIMD kernel files; the parser group (every other harness: gguf, tokenizer,
# safetensors, http, chat, jinja) compiles them with plain clang (fuzz/simd-cc), so it runs the
# fast sets as users do without AFL++'s pass over them, which took minutes per file
# (kernels/avx512/repack.c: 218 s with afl-clang-fast, 4 s with clang; fuzz/README.md). One
# build tree per group and variant, build-fuzz-afl[-asan|-cmplog]-{kernels,parsers}, kept and
# reused across campaigns; a tree whose configuration changed is rebuilt from scratch.
KERNEL_HARNESSES=${FUZZ_KERNEL_HARNESSES:-"quant sampler"}
group_of() { case " $KERNEL_HARNESSES " in *" $1 "*) echo kernels ;; *) echo parsers ;; esac; }
afl_dir() { echo "$ROOT/build-fuzz-afl${2:+-$2}-$(group_of "$1")"; } # harness [asan|cmplog]
B_REPLAY="$ROOT/build-fuzz"
MAX_BYTES=${FUZZ_CMIN_MAX_BYTES:-8192}
NPROC=$(nproc 2>/dev/null || echo 2)
T0=${FUZZ_T0:-$(date +%s)}
SYNC=${FUZZ_SYNC_DIR:-}
ROLE=${FUZZ_ROLE:-main}
# AFL++ instance names allow [A-Za-z0-9_-]: the host name, cleaned.
NAME=${FUZZ_NAME:-$(hostname 2>/dev/null | tr -c 'A-Za-z0-9_\n-' '_')}
[ -n "$NAME" ] || NAME=host
case $ROLE in main | secondary) ;; *) echo "campaign: FUZZ_ROLE is main or secondary, not '$ROLE'"; exit 2 ;; esac
[ -z "$SYNC" ] || export AFL_AUTORESUME=1
# AFL++ imports the others' finds at most every AFL_SYNC_TIME minutes (its default is much
# longer than a short campaign).
[ -z "${FUZZ_SYNC_MINUTES:-}" ] || export AFL_SYNC_TIME="$FUZZ_SYNC_MINUTES"
BUILD=${FUZZ_BUILD:-1}
CMIN_DEST=${FUZZ_CMIN_DEST:-$FUZZ/corpus}

# Containers: core_pattern and the CPU governor cannot be changed, other jobs share the
# cores, and nobody watches a UI.
# Only variables Debian's AFL++ (4.04c) knows: afl-clang-fast warns about any other AFL_* and
# sleeps 2 s per file doing so, which once doubled the build (AFL_NO_WARN_INSTABILITY and
# AFL_IGNORE_SEED_PROBLEMS, both newer than 4.04c, were exported here).
export AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 \
    AFL_NO_UI=1 AFL_FAST_CAL=1 AFL_CMPLOG_ONLY_NEW=1 AFL_SKIP_CRASHES=1
# Sanitizer builds: abort so AFL++ sees a crash; no leak check at exit in the fuzzers (the
# replay driver under ASan has it).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:symbolize=0:detect_leaks=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
export PLUMB_KERNELS= PLUMB_THREADS=1
unset PLUMB_KERNELS

targets_list() { for h in $TARGETS; do printf 'fuzz_%s ' "$h"; done; }

# One variant of one harness: plain (the main instance's and the extra secondaries'), cmplog
# (the main instance's -c) or asan (ASan/UBSan, the first secondary's). The kernels group's plain
# build uses AFL++'s CLASSIC edge instrumentation: its PCGUARD pass takes 218 s on
# kernels/avx512/repack.c alone, CLASSIC 5 s. Its ASan/UBSan build compiles the kernel files
# with the sanitizers but without coverage (fuzz/simd-cc sanitize): AFL++'s pass over them under
# ASan took 10 minutes for kernels/avx512/matmul_f.c, clang's ASan alone 66 s.
build_variant() { # harness, plain|cmplog|asan, make -j
    h=$1
    v=$2
    case $(group_of "$h")-$2 in
    kernels-plain) set -- "$1" "$2" "$3" "" AFL_LLVM_INSTRUMENT=CLASSIC ;;
    kernels-asan) set -- "$1" "$2" "$3" sanitize AFL_USE_ASAN=1 AFL_USE_UBSAN=1 ;;
    *-asan) set -- "$1" "$2" "$3" plain AFL_USE_ASAN=1 AFL_USE_UBSAN=1 ;;
    *-cmplog) set -- "$1" "$2" "$3" plain AFL_LLVM_CMPLOG=1 ;;
    *) set -- "$1" "$2" "$3" plain ;;
    esac
    if [ "$2" = plain ]; then dir=$(afl_dir "$h"); else dir=$(afl_dir "$h" "$2"); fi
    jobs=$3
    simd=$4
    shift 4
    # The environment is part of the configuration (afl-clang-fast reads it, CMake does not
    # see it): a tree built under another one starts over. A tree already configured this way
    # is only brought up to date (cmake --build reruns CMake itself when a list file changed).
    conf="simd=$simd env=$*"
    t_build=$(date +%s)
    if [ ! -f "$dir/fuzz-config" ] || [ "$(cat "$dir/fuzz-config")" != "$conf" ]; then
        rm -rf "$dir"
        launcher=-UCMAKE_C_COMPILER_LAUNCHER
        [ -z "$simd" ] || launcher="-DCMAKE_C_COMPILER_LAUNCHER=$FUZZ/simd-cc;$simd"
        env "$@" cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DPLUMB_BUILD_TESTS=OFF -DCMAKE_PROJECT_INCLUDE="$FUZZ/standalone.cmake" \
            -DCMAKE_C_COMPILER=afl-clang-fast "$launcher" >/dev/null
        printf '%s\n' "$conf" >"$dir/fuzz-config"
    fi
    env "$@" cmake --build "$dir" -j "$jobs" --target "fuzz_$h" >/dev/null
    echo "campaign: fuzz_$h ($v) up to date in $(($(date +%s) - t_build)) s, at +$(($(date +%s) - T0)) s"
}

need_afl() { command -v afl-clang-fast >/dev/null || { echo "campaign: afl-clang-fast not found (make deps)"; exit 1; }; }
build() {
    need_afl
    for h in $TARGETS; do
        for v in plain cmplog asan; do build_variant "$h" $v "$NPROC"; done
    done
}

replay_build() {
    cmake -S "$ROOT" -B "$B_REPLAY" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_PROJECT_INCLUDE="$FUZZ/standalone.cmake" >/dev/null
    cmake --build "$B_REPLAY" -j "$NPROC" --target $(targets_list) fuzz_mkseeds >/dev/null
}

dict_opt() { [ -f "$FUZZ/dict/$1.dict" ] && printf -- '-x %s' "$FUZZ/dict/$1.dict" || true; }

# The output directory of a harness's instances: fuzz/out/<harness>, or with FUZZ_SYNC_DIR the
# campaign's shared one, which every machine's instances use as their -o (AFL++ syncs through
# it: each instance writes only its own subdirectory and imports what the others found).
out_of() { if [ -n "$SYNC" ]; then echo "$SYNC/$1"; else echo "$OUT/$1"; fi; }

# Instance j of this machine: 0 is the main (-M main, CMPLOG) when FUZZ_ROLE=main, otherwise a
# secondary with CMPLOG; 1 runs the ASan/UBSan build; the others the plain build.
instance_name() {
    if [ "$1" = 0 ] && [ "$ROLE" = main ]; then echo main
    elif [ -n "$SYNC" ]; then echo "$NAME-s$1"
    else echo "s$1"; fi
}

# Builds what instance 0 needs (plain and CMPLOG), starts it, and builds the ASan/UBSan variant
# while it fuzzes (on the cores it leaves), so that the first exec comes as early as it can; the
# later instances then run for what is left of FUZZ_SECONDS.
run_one() {
    h=$1
    o=$(out_of "$h")
    in="$FUZZ/corpus/$h"
    [ -n "$(ls "$in" 2>/dev/null)" ] || { echo "campaign: $in is empty (fuzz/campaign.sh seeds)"; exit 1; }
    need_afl
    if [ "$BUILD" = 1 ]; then
        build_variant "$h" plain "$NPROC"
        build_variant "$h" cmplog "$NPROC"
    fi
    # A local campaign starts afresh; a synced one is shared and resumed (AFL_AUTORESUME).
    [ -n "$SYNC" ] || rm -rf "$o"
    mkdir -p "$o"
    echo "campaign: $h for ${SECONDS_EACH}s with $JOBS instance(s) -> $o"
    t_start=$(date +%s)
    pids=
    j=0
    while [ "$j" -lt "$JOBS" ]; do
        n=$(instance_name $j)
        if [ "$n" = main ]; then role="-M main"; else role="-S $n"; fi
        left=$((SECONDS_EACH - ($(date +%s) - t_start)))
        case $j in
        0) set -- -t 1000+ -c "$(afl_dir "$h" cmplog)/fuzz/fuzz_$h" -- "$(afl_dir "$h")/fuzz/fuzz_$h" ;;
        1)
            jobs=$((NPROC > 1 ? NPROC - 1 : 1))
            [ "$BUILD" = 0 ] || build_variant "$h" asan "$jobs"
            left=$((SECONDS_EACH - ($(date +%s) - t_start)))
            set -- -t 2000+ -- "$(afl_dir "$h" asan)/fuzz/fuzz_$h"
            ;;
        *) set -- -t 1000+ -- "$(afl_dir "$h")/fuzz/fuzz_$h" ;;
        esac
        if [ "$left" -lt 10 ]; then
            echo "campaign: no time left for instance $n of $h (FUZZ_SECONDS=$SECONDS_EACH)"
            break
        fi
        [ "$j" = 0 ] || sleep 2
        afl-fuzz $role -i "$in" -o "$o" $(dict_opt "$h") -m none -V "$left" "$@" \
            >"$o/$n.log" 2>&1 &
        pids="$pids $!"
        if [ "$j" = 0 ]; then first_exec "$h" "$o/$n.log" & fi
        j=$((j + 1))
    done
    rc=0
    for p in $pids; do wait "$p" || rc=1; done
    [ "$rc" = 0 ] || echo "campaign: an instance of $h exited with an error (see $o/*.log)"
    collect "$h"
}

# When the first instance's fork server runs its first test case (the dry run), relative to
# the start of this campaign.sh (or FUZZ_T0): the figure fuzz/README.md's targets are about.
first_exec() {
    i=0
    while [ "$i" -lt "$SECONDS_EACH" ]; do
        if grep -q 'dry run' "$2" 2>/dev/null; then
            echo "campaign: first exec of $1 at +$(($(date +%s) - T0)) s"
            return 0
        fi
        sleep 1
        i=$((i + 1))
    done
}

# Crashes and hangs -> fuzz/findings/<harness>/ with a one-line repro each.
collect() {
    h=$1
    dst="$FUZZ/findings/$h"
    n=0
    o=$(out_of "$h")
    for f in "$o"/*/crashes/id:* "$o"/*/hangs/id:*; do
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
        for s in "$(out_of "$h")"/*/fuzzer_stats; do
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

cmin_one() { # harness, input dir[, pinned dir] -> $CMIN_DEST/<harness> (fuzz/corpus/<harness>)
    h=$1
    pin=${3:-}
    tmp="$OUT/cmin-$h"
    rm -rf "$tmp"
    need_afl
    [ "$BUILD" = 0 ] || build_variant "$h" plain "$NPROC"
    afl-cmin -i "$2" -o "$tmp" -m none -t 5000 -- "$(afl_dir "$h")/fuzz/fuzz_$h" >"$OUT/cmin-$h.log" 2>&1 || {
        echo "campaign: afl-cmin of $h failed (see $OUT/cmin-$h.log)"
        return 1
    }
    mkdir -p "$CMIN_DEST/$h"
    # Names are stable: an input afl-cmin keeps keeps its name (the number it got last time, a
    # seed's name), so a merge shows in git as the inputs it added and dropped. Queue entries
    # (AFL++'s id:…) take numbers after the highest one the corpus had, dropped ones included, so
    # no name comes back with other bytes.
    next=$(ls "$CMIN_DEST/$h" "$tmp" | awk '/^[0-9]+$/ && $0 + 0 >= n { n = $0 + 1 } END { print n + 0 }')
    find "$CMIN_DEST/$h" -type f ! -name '.*' -delete
    kept=0
    added=0
    for f in "$tmp"/*; do
        case ${f##*/} in
        *id:*)
            cp "$f" "$CMIN_DEST/$h/$(printf '%03d' "$next")"
            next=$((next + 1))
            added=$((added + 1))
            ;;
        *)
            cp "$f" "$CMIN_DEST/$h/"
            kept=$((kept + 1))
            ;;
        esac
    done
    # Pinned inputs stay whatever afl-cmin chose: the curated ones, named for what they are.
    pinned=0
    for f in ${pin:+"$pin"/*}; do
        [ -e "$f" ] && [ ! -e "$CMIN_DEST/$h/${f##*/}" ] || continue
        cp "$f" "$CMIN_DEST/$h/"
        pinned=$((pinned + 1))
    done
    echo "campaign: $CMIN_DEST/$h: $((kept + added + pinned)) inputs ($kept kept, $added new," \
        "$pinned pinned), $(du -sh "$CMIN_DEST/$h" | cut -f1)"
}

cmin() { # the corpus plus the last campaign's queues, minimized
    mkdir -p "$OUT"
    for h in $TARGETS; do
        all="$OUT/cmin-in-$h"
        rm -rf "$all"
        mkdir -p "$all"
        find "$FUZZ/corpus/$h" -type f ! -name '.*' -exec cp {} "$all/" \;
        # Named corpus inputs (a model's chat template, a seed made to reach one branch:
        # llama-3.2, s-phi3-32-layers-128k-no-window) are curated and survive every merge; the
        # numbered ones are earlier merges' queue entries, and afl-cmin decides about them.
        pin="$OUT/cmin-pin-$h"
        rm -rf "$pin"
        mkdir -p "$pin"
        for f in "$FUZZ/corpus/$h"/*; do
            case ${f##*/} in *[!0-9]*) [ -f "$f" ] && cp "$f" "$pin/" ;; esac
        done
        for q in "$(out_of "$h")"/*/queue; do
            [ -d "$q" ] || continue
            inst=${q%/queue}
            inst=${inst##*/}
            # Big queue entries would bloat the checked-in corpus (FUZZ_CMIN_MAX_BYTES).
            find "$q" -maxdepth 1 -type f -name 'id:*' -size -$((MAX_BYTES + 1))c -exec \
                sh -c 'd=$1; p=$2; shift 2; for f; do cp "$f" "$d/$p-${f##*/}"; done' sh "$all" "$inst" {} +
        done
        # A queue holds copies of the corpus it started from (orig:<name>): keep one file per
        # content, the corpus's name first, so afl-cmin cannot keep the copy and drop the name.
        (cd "$all" && sha1sum -- *) | awk '{ q = ($2 ~ /id:/); print $1, q, $2 }' |
            sort -k1,1 -k2,2n -k3,3 | awk 'seen[$1]++ { print $3 }' | (cd "$all" && xargs -r rm -f --)
        cmin_one "$h" "$all" "$pin"
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
all) for h in $TARGETS; do run_one "$h"; done; summary ;;
build) build ;;
run) for h in $TARGETS; do run_one "$h"; done; summary ;;
summary) summary ;;
replay) replay ;;
cmin) cmin ;;
seeds) seeds ;;
*) echo "usage: $0 [all|build|run|summary|replay|cmin|seeds]"; exit 2 ;;
esac

#!/usr/bin/env bash
# perf.sh — `make perf`, `make perf-baseline`, `make perf-history`: builds the revisions in Release,
# runs `plumb bench` interleaved on the same pinned cores, and hands the JSON to perf_report.
# Not the statistics (perf/perf_stats.c) nor the benchmark (tools/cmd_bench.c).
#
#   perf/perf.sh ab        [BASE=HEAD~1] [SUITE=quick|full] [PAIRS=5] [THRESHOLD=0.03]
#                          [INSTR=1|0|only] [INSTR_THRESHOLD=1] [CHAT=1|0]
#   perf/perf.sh baseline  [SUITE=quick]
#   perf/perf.sh history   REVS="a b c" [ROUNDS=3] [SUITE=quick] [INSTR=1|0]
# INSTR: also count instructions under callgrind (perf_instr.sh) for both sides and add the
# deltas to the report (a row past INSTR_THRESHOLD % is a REGRESSION too); INSTR=only skips the
# timed rounds (deterministic and quick: what `git bisect run` wants). CHAT: the suite's chat row
# (bench_chat: per-turn time to first token with and without the prefix cache).
# SCALING: the candidate's scaling sweep (perf/scaling.sh: 1, 2, 4, ... threads up to the cores,
# the peers beside it where ../shared/peers is); a row slower with more threads is a REGRESSION.
# Other knobs: THREADS (default 2), CPUS (taskset list, default all), LOAD_MAX (default
# THREADS + 0.5), JOBS. Exit: 0 no regression, 1 a REGRESSION, 2 could not measure (125 with
# BISECT=1: what `git bisect run` reads as "skip this commit", e.g. one that does not build).
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
MODE=${1:-ab}
shift || true
for kv in "$@"; do case $kv in *=*) export "${kv?}" ;; esac; done
BASE=${BASE:-HEAD~1}
SUITE=${SUITE:-quick}
PAIRS=${PAIRS:-5}
ROUNDS=${ROUNDS:-3}
THRESHOLD=${THRESHOLD:-0.03}
INSTR=${INSTR:-1}
INSTR_THRESHOLD=${INSTR_THRESHOLD:-1}
CHAT=${CHAT:-1}
SCALING=${SCALING:-1}
THREADS=${THREADS:-2}
LOAD_MAX=${LOAD_MAX:-$(awk -v t="$THREADS" 'BEGIN { print t + 0.5 }')}
JOBS=${JOBS:-2}
CPUS=${CPUS:-}
PB=$ROOT/build-perf
CAND=$PB/cand

FAIL_RC=2
[ "${BISECT:-0}" = 1 ] && FAIL_RC=125
die() { echo "perf: $*" >&2; exit "$FAIL_RC"; }
loadavg() { cut -d' ' -f1 /proc/loadavg; }

# The suite, one line per benchmark: "bench preset type n_prompt n_gen reps" (plumb bench) or
# "chat preset type turns gen" (bench_chat, per-turn time to first token, cache on and off).
suite() {
    case $SUITE in
    quick) printf '%s\n' "bench tiny Q8_0 64 128 3" "bench qwen2-0.5b Q8_0 64,512 64 2" ;;
    full)
        for t in Q8_0 Q4_0 Q4_K_M; do
            printf '%s\n' "bench tiny $t 64 128 3" "bench qwen2-0.5b $t 64,512 128 2" \
                "bench llama-1b $t 64,512 64 2"
        done ;;
    *) die "SUITE=$SUITE: not quick or full" ;;
    esac
    [ "$CHAT" = 1 ] && echo "chat qwen2-0.5b Q8_0 4 8"
    return 0
}

# The models whose instructions are counted: the quick suite's tiny preset (seconds), the full
# suite's tiny and qwen2-0.5b (about 1.5 minutes a side).
instr_models() { [ "$SUITE" = full ] && echo "tiny qwen2-0.5b" || echo tiny; }

# build DIR SRC: Release build of plumb, bench_chat and (INSTR) the callgrind drivers from SRC
# into DIR (the targets that SRC has: an older commit may predate some); quiet unless it fails.
build() {
    local dir=$1 src=$2 log=$1.log targets=(plumb_cli)
    [ -f "$src/perf/bench_chat.c" ] && targets+=(bench_chat)
    [ "$INSTR" != 0 ] && [ -f "$src/perf/instr_model.c" ] && targets+=(instr_kernels instr_model instr_compare)
    mkdir -p "$dir"
    { cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DPLUMB_BUILD_TESTS=OFF &&
        cmake --build "$dir" -j "$JOBS" --target "${targets[@]}"; } >"$log" 2>&1 ||
        { tail -20 "$log" >&2; die "build of $src failed (log: $log)"; }
}

# rev_plumb REV: echoes the path of a built plumb for that commit (a git worktree under
# build-perf/, reused while the commit is the same).
rev_plumb() {
    local sha short
    sha=$(git rev-parse --verify -q "$1^{commit}") || die "no such revision: $1"
    short=${sha:0:12}
    local src=$PB/src-$short dir=$PB/bld-$short
    [ -x "$dir/tools/plumb" ] || echo "perf: building $1 ($short) in $dir" >&2
    [ -d "$src" ] || git worktree add -q --detach "$src" "$sha" >&2 || die "git worktree add $sha"
    build "$dir" "$src" # incremental: adds what this run needs (bench_chat, instr drivers)
    echo "$dir/tools/plumb"
}

build_candidate() {
    echo "perf: building the work tree in $CAND" >&2
    build "$CAND" "$ROOT"
    cmake --build "$CAND" -j "$JOBS" --target perf_report >>"$CAND.log" 2>&1 || die "perf_report build"
}

models() {
    mkdir -p "$PB/models"
    suite | while read -r _ preset type _; do
        local f=$PB/models/$preset-$type.gguf
        [ -f "$f" ] || "$CAND/tools/plumb" mkmodel "$f" --preset "$preset" --type "$type" >/dev/null ||
            die "mkmodel $preset $type"
    done
}

# bench PLUMB OUT.json kind preset type args...: one benchmark of the suite with that build.
bench() {
    local p=$1 out=$2 kind=$3 f=$PB/models/$4-$5.gguf extra=""
    local pin=""
    [ -n "$CPUS" ] && pin="taskset -c $CPUS"
    if [ "$kind" = chat ]; then
        local bc
        bc=$(build_of "$p")/perf/bench_chat
        [ -x "$bc" ] || { echo '{"bench": "chat", "missing": true}' >"$out"; return 0; }
        $pin "$bc" "$f" -t "$THREADS" --turns "$6" --gen "$7" --reps 3 -o "$out" >"$out.log" 2>&1 ||
            { tail -5 "$out.log" >&2; die "bench_chat failed: $bc on $f"; }
        return 0
    fi
    "$p" bench --help 2>&1 | grep -q -- --latencies && extra=--latencies
    $pin "$p" bench -m "$f" -p "$6" -n "$7" -r "$8" -t "$THREADS" -o json $extra \
        2>"$out.err" >"$out" || { tail -5 "$out.err" >&2; die "bench failed: $p on $f"; }
}

# run_rounds DIR ROUNDS PLUMB...: round-robin over the plumbs; which goes first rotates from
# one round to the next for every line of the suite (and from one line to the next in a round).
run_rounds() {
    local dir=$1 n=$2
    shift 2
    local plumbs=("$@") k=${#plumbs[@]} line
    : >"$dir/runs.tsv"
    for ((r = 0; r < n; r++)); do
        line=0
        while read -r kind preset type args; do
            local first=$(((r + line) % k)) order="" files=()
            local lb
            lb=$(loadavg)
            for ((j = 0; j < k; j++)); do
                local s=$(((first + j) % k))
                order+=$(printf "\\x$(printf %x $((65 + s)))")
                # shellcheck disable=SC2086 # args: the line's numbers, split on purpose
                bench "${plumbs[s]}" "$dir/r$r-$kind-$preset-$type-$s.json" "$kind" "$preset" \
                    "$type" $args
            done
            for ((s = 0; s < k; s++)); do files+=("r$r-$kind-$preset-$type-$s.json"); done
            echo "$r $preset-$type $order $lb $(loadavg) ${files[*]}" >>"$dir/runs.tsv"
            echo "perf: round $((r + 1))/$n $kind $preset $type ($order) load $lb -> $(loadavg)" >&2
            line=$((line + 1))
        done < <(suite)
    done
}

cpu_signature() {
    local name flags
    name=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//; s/[^A-Za-z0-9]\+/-/g; s/-$//')
    flags=$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2- | sha256sum | cut -c1-8)
    echo "${name:-unknown}-$flags"
}

# build_of PLUMB: the build directory of a plumb binary (DIR/tools/plumb).
build_of() { dirname "$(dirname "$1")"; }

# instr_side BUILD OUT.json: perf_instr.sh (this tree's: one procedure for both sides) on BUILD,
# run in BUILD's source tree (the work tree for the candidate, else its worktree src-<sha>) so
# the JSON names that commit, on the candidate's model files. 1 when BUILD has no callgrind
# drivers (a commit older than them).
instr_side() {
    local b=$1 out=$2 src=$ROOT m
    [ "$b" = "$CAND" ] || src=$PB/src-${b##*/bld-}
    [ -x "$b/perf/instr_model" ] || return 1
    for m in $(instr_models); do # the candidate's model files for every side
        [ -f "$CAND/perf-$m-q8_0.gguf" ] || "$CAND/tools/plumb" mkmodel "$CAND/perf-$m-q8_0.gguf" \
            --preset "$m" --type Q8_0 >/dev/null || die "mkmodel $m"
        [ "$b" = "$CAND" ] || ln -sf "$CAND/perf-$m-q8_0.gguf" "$b/perf-$m-q8_0.gguf"
    done
    echo "perf: instructions under callgrind ($(instr_models)): $src" >&2
    # (GIT_DIR: `git bisect run` exports it, and git in SRC would then describe ROOT's checkout)
    (cd "$src" && unset GIT_DIR GIT_WORK_TREE && bash "$ROOT/perf/perf_instr.sh" -b "$b" --models "$(instr_models)" -o "$out") \
        >"$out.md" 2>"$out.log" || { tail -5 "$out.log" >&2; die "perf_instr.sh failed on $b"; }
}

# instr_ab WORK BASE_PLUMB: both sides' counts and their comparison into WORK/instr.md; the
# exit status of instr_compare (0 same, 1 a REGRESSION), 3 when the baseline has no drivers.
instr_ab() {
    local work=$1
    command -v valgrind >/dev/null || die "INSTR needs valgrind (make deps), or INSTR=0"
    instr_side "$CAND" "$work/instr-A.json"
    instr_side "$(build_of "$2")" "$work/instr-B.json" || return 3
    "$CAND/perf/instr_compare" "$work/instr-B.json" "$work/instr-A.json" \
        --threshold "$INSTR_THRESHOLD" >"$work/instr.md"
}

date_tag=$(date +%Y-%m-%d)
case $MODE in
ab)
    build_candidate
    base=$(rev_plumb "$BASE") || exit "$FAIL_RC"
    models || exit "$FAIL_RC"
    work=$PB/run-ab
    rm -rf "$work" && mkdir -p "$work"
    if [ "$INSTR" = only ]; then # no timing, no report file: the verdict of the counts alone
        instr_ab "$work" "$base"
        rc=$?
        [ $rc = 3 ] && die "BASE=$BASE has no callgrind drivers (perf/instr_model.c)"
        cat "$work/instr.md"
        exit $rc
    fi
    run_rounds "$work" "$PAIRS" "$CAND/tools/plumb" "$base"
    short=$(git rev-parse --short=8 HEAD)
    git diff --quiet HEAD -- . 2>/dev/null || short=$short-dirty
    mkdir -p perf/reports
    prefix=perf/reports/$date_tag-$short
    bl=perf/baselines/$(cpu_signature).json
    args=(--threshold "$THRESHOLD" --load-max "$LOAD_MAX")
    [ -f "$bl" ] && args+=(--baseline "$bl")
    "$CAND/perf/perf_report" pairs "$work" "$prefix" "${args[@]}"
    rc=$?
    [ $rc -ge 2 ] && exit "$FAIL_RC"
    if [ "$INSTR" != 0 ]; then
        instr_ab "$work" "$base"
        irc=$?
        {
            printf '\n## Instructions (callgrind; ref and avx2 sets; %s)\n\n' "$(instr_models)"
            if [ $irc = 3 ]; then
                echo "Not counted: the baseline predates the callgrind drivers."
            else
                cp "$work/instr-A.json" "$prefix-instr-A.json"
                cp "$work/instr-B.json" "$prefix-instr-B.json"
                echo "Counts do not move with load: any change is real; past ${INSTR_THRESHOLD}% is"
                echo "a REGRESSION. Per token: the marginal cost of a prefilled / decoded token."
                echo "Files: $(basename "$prefix")-instr-A.json (candidate), -instr-B.json (baseline)."
                echo
                sed -n '/^| row/,/^$/p' "$work/instr.md"
                tail -1 "$work/instr.md" | sed 's/^/**Instructions: /; s/$/.**/'
            fi
        } >>"$prefix.md"
        if [ $irc = 1 ] && [ $rc = 0 ]; then
            sed -i 's/^\*\*Verdict: no regression (exit status 0)/**Verdict: REGRESSION in the instruction counts (exit status 1)/' "$prefix.md"
            rc=1
        fi
    fi
    if [ "$SCALING" = 1 ]; then # the candidate at 1, 2, 4, ... threads up to the cores, peers beside
        OUT=$PB/scaling PLUMB=$CAND/tools/plumb PP=${SCALING_PP:-128} TG=${SCALING_TG:-32} \
            FILES="q05-q8=--preset qwen2-0.5b --type Q8_0" perf/scaling.sh run >"$work/scaling.md" 2>"$work/scaling.log"
        src=$?
        {
            echo
            echo "## Scaling: plumb at every thread count, against the peers where they are"
            echo
            echo "The candidate alone (perf/scaling.sh; \`make perf-scaling\` for more files and the peers)."
            echo
            cat "$work/scaling.md"
        } >>"$prefix.md"
        [ $src = 2 ] && echo "perf: the scaling sweep could not run (log: $work/scaling.log)" >&2
        if [ $src = 1 ] && [ $rc = 0 ]; then
            sed -i 's/^\*\*Verdict: no regression (exit status 0)/**Verdict: REGRESSION: more threads slower than fewer (exit status 1)/' "$prefix.md"
            rc=1
        fi
    fi
    sh perf/plots.sh "$prefix" "$THRESHOLD" || echo "perf: plots failed (gnuplot missing? make deps)" >&2
    awk '/^\| row/ { t++ } t == 1 && /^\|/; /^\*\*(Verdict|Instructions)/' "$prefix.md"
    echo "perf: report $prefix.md (+ .json, plots)"
    exit $rc ;;
baseline)
    build_candidate
    SUITE=quick models || exit "$FAIL_RC"
    work=$PB/run-baseline
    rm -rf "$work" && mkdir -p "$work"
    SUITE=quick run_rounds "$work" "$PAIRS" "$CAND/tools/plumb"
    mkdir -p perf/baselines
    out=perf/baselines/$(cpu_signature).json
    "$CAND/perf/perf_report" baseline "$work" "$out" "$(cpu_signature)" || exit "$FAIL_RC"
    echo "perf: baseline $out" ;;
history)
    [ -n "${REVS:-}" ] || die 'give REVS="a b c"'
    build_candidate
    plumbs=()
    for r in $REVS; do plumbs+=("$(rev_plumb "$r")") || exit "$FAIL_RC"; done
    models || exit "$FAIL_RC"
    work=$PB/run-history
    rm -rf "$work" && mkdir -p "$work"
    for r in $REVS; do git rev-parse --short=8 "$r"; done >"$work/revs.txt"
    run_rounds "$work" "$ROUNDS" "${plumbs[@]}"
    if [ "$INSTR" != 0 ]; then # instructions per token of each rev (those with the drivers)
        command -v valgrind >/dev/null || die "INSTR needs valgrind (make deps), or INSTR=0"
        i=0
        for r in $REVS; do
            short=$(sed -n "$((i + 1))p" "$work/revs.txt")
            instr_side "$(build_of "${plumbs[i]}")" "$work/instr-$short.json" ||
                echo "perf: $r predates the callgrind drivers: no instruction counts" >&2
            i=$((i + 1))
        done
    fi
    mkdir -p perf/reports
    prefix=perf/reports/history-$date_tag
    "$CAND/perf/perf_report" history "$work" "$prefix" || exit "$FAIL_RC"
    sh perf/plots.sh --history "$prefix" || echo "perf: plots failed" >&2
    cat "$prefix.md" ;;
*) die "unknown mode $MODE (ab, baseline, history)" ;;
esac

#!/usr/bin/env bash
# perf.sh — `make perf`, `make perf-baseline`, `make perf-history`: builds the revisions in Release,
# runs `plumb bench` interleaved on the same pinned cores, and hands the JSON to perf_report.
# Not the statistics (perf/perf_stats.c) nor the benchmark (tools/cmd_bench.c).
#
#   perf/perf.sh ab        [BASE=HEAD~1] [SUITE=quick|full] [PAIRS=5] [THRESHOLD=0.03]
#   perf/perf.sh baseline  [SUITE=quick]
#   perf/perf.sh history   REVS="a b c" [ROUNDS=3] [SUITE=quick]
# Other knobs: THREADS (default 2), CPUS (taskset list, default all), LOAD_MAX (default
# THREADS + 0.5), JOBS. Exit: 0 no regression, 1 a REGRESSION, 2 could not measure.
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
THREADS=${THREADS:-2}
LOAD_MAX=${LOAD_MAX:-$(awk -v t="$THREADS" 'BEGIN { print t + 0.5 }')}
JOBS=${JOBS:-2}
CPUS=${CPUS:-}
PB=$ROOT/build-perf
CAND=$PB/cand

die() { echo "perf: $*" >&2; exit 2; }
loadavg() { cut -d' ' -f1 /proc/loadavg; }

# The suite: one line per model: preset type n_prompt n_gen reps.
suite() {
    case $SUITE in
    quick) printf '%s\n' "tiny Q8_0 64 128 3" "qwen2-0.5b Q8_0 64,512 64 2" ;;
    full)
        for t in Q8_0 Q4_0 Q4_K_M; do
            printf '%s\n' "tiny $t 64 128 3" "qwen2-0.5b $t 64,512 128 2" "llama-1b $t 64,512 64 2"
        done ;;
    *) die "SUITE=$SUITE: not quick or full" ;;
    esac
}

# build DIR SRC: Release build of plumb (+ perf_report) from SRC into DIR; quiet unless it fails.
build() {
    local dir=$1 src=$2 log=$1.log
    mkdir -p "$dir"
    { cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DPLUMB_BUILD_TESTS=OFF &&
        cmake --build "$dir" -j "$JOBS" --target plumb_cli; } >"$log" 2>&1 ||
        { tail -20 "$log" >&2; die "build of $src failed (log: $log)"; }
}

# rev_plumb REV: echoes the path of a built plumb for that commit (a git worktree under
# build-perf/, reused while the commit is the same).
rev_plumb() {
    local sha short
    sha=$(git rev-parse --verify -q "$1^{commit}") || die "no such revision: $1"
    short=${sha:0:12}
    local src=$PB/src-$short dir=$PB/bld-$short
    if [ ! -x "$dir/tools/plumb" ]; then
        echo "perf: building $1 ($short) in $dir" >&2
        [ -d "$src" ] || git worktree add -q --detach "$src" "$sha" >&2 || die "git worktree add $sha"
        build "$dir" "$src"
    fi
    echo "$dir/tools/plumb"
}

build_candidate() {
    echo "perf: building the work tree in $CAND" >&2
    build "$CAND" "$ROOT"
    cmake --build "$CAND" -j "$JOBS" --target perf_report >>"$CAND.log" 2>&1 || die "perf_report build"
}

models() {
    mkdir -p "$PB/models"
    suite | while read -r preset type _; do
        local f=$PB/models/$preset-$type.gguf
        [ -f "$f" ] || "$CAND/tools/plumb" mkmodel "$f" --preset "$preset" --type "$type" >/dev/null ||
            die "mkmodel $preset $type"
    done
}

# bench PLUMB OUT.json preset type pp tg reps
bench() {
    local p=$1 out=$2 f=$PB/models/$3-$4.gguf extra=""
    "$p" bench --help 2>&1 | grep -q -- --latencies && extra=--latencies
    local pin=""
    [ -n "$CPUS" ] && pin="taskset -c $CPUS"
    $pin "$p" bench -m "$f" -p "$5" -n "$6" -r "$7" -t "$THREADS" -o json $extra \
        2>"$out.err" >"$out" || { tail -5 "$out.err" >&2; die "bench failed: $p on $f"; }
}

# run_rounds DIR ROUNDS PLUMB...: round-robin over the plumbs, the order rotating each round.
run_rounds() {
    local dir=$1 n=$2
    shift 2
    local plumbs=("$@") k=${#plumbs[@]}
    : >"$dir/runs.tsv"
    local line=0
    for ((r = 0; r < n; r++)); do
        while read -r preset type pp tg reps; do
            local first=$(((r + line) % k)) order="" files=()
            local lb
            lb=$(loadavg)
            for ((j = 0; j < k; j++)); do
                local s=$(((first + j) % k))
                order+=$(printf "\\x$(printf %x $((65 + s)))")
                bench "${plumbs[s]}" "$dir/r$r-$preset-$type-$s.json" "$preset" "$type" "$pp" "$tg" "$reps"
            done
            for ((s = 0; s < k; s++)); do files+=("r$r-$preset-$type-$s.json"); done
            echo "$r $preset-$type $order $lb $(loadavg) ${files[*]}" >>"$dir/runs.tsv"
            echo "perf: round $((r + 1))/$n $preset $type ($order) load $lb -> $(loadavg)" >&2
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

date_tag=$(date +%Y-%m-%d)
case $MODE in
ab)
    build_candidate
    base=$(rev_plumb "$BASE") || exit 2
    models || exit 2
    work=$PB/run-ab
    rm -rf "$work" && mkdir -p "$work"
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
    [ $rc -ge 2 ] && exit 2
    sh perf/plots.sh "$prefix" "$THRESHOLD" || echo "perf: plots failed (gnuplot missing? make deps)" >&2
    sed -n '/^| row/,/^$/p; /^\*\*Verdict/p' "$prefix.md"
    echo "perf: report $prefix.md (+ .json, plots)"
    exit $rc ;;
baseline)
    build_candidate
    SUITE=quick models || exit 2
    work=$PB/run-baseline
    rm -rf "$work" && mkdir -p "$work"
    SUITE=quick run_rounds "$work" "$PAIRS" "$CAND/tools/plumb"
    mkdir -p perf/baselines
    out=perf/baselines/$(cpu_signature).json
    "$CAND/perf/perf_report" baseline "$work" "$out" "$(cpu_signature)" || exit 2
    echo "perf: baseline $out" ;;
history)
    [ -n "${REVS:-}" ] || die 'give REVS="a b c"'
    build_candidate
    plumbs=()
    for r in $REVS; do plumbs+=("$(rev_plumb "$r")") || exit 2; done
    models || exit 2
    work=$PB/run-history
    rm -rf "$work" && mkdir -p "$work"
    for r in $REVS; do git rev-parse --short=8 "$r"; done >"$work/revs.txt"
    run_rounds "$work" "$ROUNDS" "${plumbs[@]}"
    mkdir -p perf/reports
    prefix=perf/reports/history-$date_tag
    "$CAND/perf/perf_report" history "$work" "$prefix" || exit 2
    sh perf/plots.sh --history "$prefix" || echo "perf: plots failed" >&2
    cat "$prefix.md" ;;
*) die "unknown mode $MODE (ab, baseline, history)" ;;
esac

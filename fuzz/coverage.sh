#!/bin/sh
# coverage.sh — the `make fuzz-coverage` driver: source-based coverage (clang's
# -fprofile-instr-generate) of each harness's corpus and regressions, reported for the files that
# harness exists to test. Not a campaign (campaign.sh) and not a CI gate: it measures, it checks
# nothing but that every replay passes.
#
#   fuzz/coverage.sh   build build-fuzz-cov/, replay, merge, report
#
# Output: a table on stdout and in build-fuzz-cov/coverage.txt (per file and a TOTAL per harness:
# lines, branches, functions covered/total), build-fuzz-cov/coverage.tsv (harness, file,
# lines_covered, lines_total, branches_covered, branches_total; TOTAL rows included) for before /
# after comparisons, and the annotated sources under build-fuzz-cov/html/<harness>/index.html.
# Environment: FUZZ_TARGETS (default: every harness), FUZZ_HARNESSES (the full list; default:
# every fuzz/fuzz_<name>.c), FUZZ_COV_DIR (build-fuzz-cov), FUZZ_COV_JOBS (make -j; nproc).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FUZZ="$ROOT/fuzz"
HARNESSES=${FUZZ_HARNESSES:-$(cd "$FUZZ" && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//' | tr '\n' ' ')}
TARGETS=${FUZZ_TARGETS:-$HARNESSES}
B=${FUZZ_COV_DIR:-"$ROOT/build-fuzz-cov"}
JOBS=${FUZZ_COV_JOBS:-$(nproc 2>/dev/null || echo 2)}

# The files each harness exists to test, relative to the repository root (globs allowed). Code a
# harness only passes through (the driver, core.c, the Jinja engine under fuzz_http) is left
# out: its coverage would say nothing about the harness.
target_files() {
    case $1 in
    gguf) echo engine/gguf/gguf.c engine/runtime/model.c engine/runtime/arch.c \
        engine/tokenizer/tokenizer.c ;;
    tokenizer) echo engine/tokenizer/tokenizer.c engine/tokenizer/tokenizer_encode.c \
        engine/tokenizer/detok.c engine/tokenizer/pretok.c engine/tokenizer/utf8.c \
        engine/runtime/tokenizer_api.c ;;
    quant) echo kernels/ref/quant.c kernels/ref/matmul.c kernels/avx2/quant.c \
        kernels/avx2/matmul_q.c kernels/avx2/matmul_f.c kernels/avx2/repack.c \
        kernels/avx512/quant.c kernels/avx512/matmul_q.c kernels/avx512/matmul_f.c \
        kernels/avx512/repack.c kernels/avx512/repack_k.c ;;
    sampler) echo engine/runtime/sampler.c kernels/ref/sample.c ;;
    chat) echo engine/runtime/chat.c engine/runtime/history.c engine/runtime/kvcache.c \
        engine/runtime/generate.c ;;
    safetensors) echo engine/features/safetensors.c ;;
    http) echo serve/request.c serve/reply.c engine/runtime/chat_template.c ;;
    jinja) echo engine/jinja/*.c ;;
    spm_model) echo engine/features/spm_model.c ;;
    *)
        echo "coverage: no target files for harness '$1' (add them to target_files in $0)" >&2
        return 1
        ;;
    esac
}

# llvm-profdata and llvm-cov of the clang that builds (their formats follow its version).
llvm_tool() {
    v=$(clang -dumpversion | cut -d. -f1)
    for t in "$1-$v" "$1"; do
        if command -v "$t" >/dev/null; then
            echo "$t"
            return 0
        fi
    done
    echo "coverage: $1 not found (make deps)" >&2
    return 1
}
PROFDATA=$(llvm_tool llvm-profdata)
COV=$(llvm_tool llvm-cov)
command -v jq >/dev/null || { echo "coverage: jq not found (make deps)"; exit 1; }
# The harnesses pick their kernel sets themselves (as in the ctest replay).
unset PLUMB_KERNELS PLUMB_THREADS

build() {
    flags="-fprofile-instr-generate -fcoverage-mapping"
    cmake -S "$ROOT" -B "$B" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DPLUMB_BUILD_TESTS=OFF -DCMAKE_PROJECT_INCLUDE="$FUZZ/standalone.cmake" \
        -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS=-fprofile-instr-generate >/dev/null
    t=
    for h in $TARGETS; do t="$t fuzz_$h"; done
    cmake --build "$B" -j "$JOBS" --target $t >/dev/null
}

# The first input (in the driver's order) that fuzz_<h> fails on, for the message.
first_failing() {
    h=$1
    shift
    find "$@" -type f ! -name '.*' | LC_ALL=C sort | while IFS= read -r f; do
        if ! LLVM_PROFILE_FILE=/dev/null "$B/fuzz/fuzz_$h" "$f" >/dev/null 2>&1; then
            echo "${f#"$ROOT/"}"
            return 0
        fi
    done
}

# Replays corpus/<h> and regressions/<h> into <h>.profdata. A failing replay is a finding (an
# oracle or a sanitizer fired on a checked-in input), not a coverage problem: stop and say so.
replay() {
    h=$1
    p="$B/profile"
    mkdir -p "$p"
    rm -f "$p/$h".*.profraw "$p/$h.profdata"
    set --
    for d in "$FUZZ/corpus/$h" "$FUZZ/regressions/$h"; do [ ! -d "$d" ] || set -- "$@" "$d"; done
    [ $# -gt 0 ] || { echo "coverage: no corpus for $h (fuzz/corpus/$h)"; exit 1; }
    t0=$(date +%s)
    if ! LLVM_PROFILE_FILE="$p/$h.%p.profraw" "$B/fuzz/fuzz_$h" "$@" >"$p/$h.log" 2>&1; then
        tail -n 5 "$p/$h.log"
        echo "coverage: FAILED: fuzz_$h fails on $(first_failing "$h" "$@")"
        echo "coverage: a finding, not a coverage problem (log: $p/$h.log)"
        exit 1
    fi
    echo "coverage: $(tail -n 1 "$p/$h.log" | sed "s|^$B/fuzz/||") (+$(($(date +%s) - t0)) s)"
    "$PROFDATA" merge -sparse -o "$p/$h.profdata" "$p/$h".*.profraw
}

# Per target file of h: harness, file, lines, branches and functions covered and total (TSV).
summarize() {
    h=$1
    files=$(cd "$ROOT" && target_files "$h")
    set --
    for f in $files; do
        [ -f "$ROOT/$f" ] || {
            echo "coverage: $h: no file $f (fix target_files in $0)" >&2
            exit 1
        }
        set -- "$@" "$ROOT/$f"
    done
    "$COV" export -format=text -summary-only -instr-profile="$B/profile/$h.profdata" \
        "$B/fuzz/fuzz_$h" "$@" | jq -r --arg h "$h" --arg root "$ROOT/" '.data[0].files[] |
        .summary as $s | [$h, (.filename | ltrimstr($root)), $s.lines.covered, $s.lines.count,
        $s.branches.covered, $s.branches.count, $s.functions.covered, $s.functions.count] | @tsv' \
        >"$B/profile/$h.tsv"
    for f in $files; do
        cut -f 2 "$B/profile/$h.tsv" | grep -qx "$f" || {
            echo "coverage: $h: $f is not in fuzz_$h (fix target_files in $0)" >&2
            exit 1
        }
    done
    "$COV" show -format=html -output-dir="$B/html/$h" -instr-profile="$B/profile/$h.profdata" \
        -show-branches=count -show-line-counts-or-regions -show-branch-summary \
        -show-region-summary=false -project-title="fuzz_$h: corpus + regressions" \
        "$B/fuzz/fuzz_$h" "$@"
}

# The TSV rows of every harness -> the table (with a TOTAL per harness) and coverage.tsv.
report() {
    printf 'harness\tfile\tlines_covered\tlines_total\tbranches_covered\tbranches_total\n' \
        >"$B/coverage.tsv"
    for h in $TARGETS; do cat "$B/profile/$h.tsv"; done | awk -F '\t' -v tsv="$B/coverage.tsv" '
        function frac(c, n) { return n ? sprintf("%d/%d %5.1f%%", c, n, 100 * c / n) : "-" }
        function row(h, f, l, lt, b, bt, fn, ft) {
            printf "%-11s %-38s %18s %18s %14s\n", h, f, frac(l, lt), frac(b, bt), frac(fn, ft)
            printf "%s\t%s\t%d\t%d\t%d\t%d\n", h, f, l, lt, b, bt >>tsv
        }
        function total() {
            if (cur != "") row(cur, "TOTAL", s[3], s[4], s[5], s[6], s[7], s[8])
            for (i = 3; i <= 8; i++) s[i] = 0
        }
        BEGIN {
            printf "%-11s %-38s %18s %18s %14s\n", "harness", "file", "lines", "branches", \
                "functions"
        }
        $1 != cur { total(); cur = $1 }
        { row($1, $2, $3, $4, $5, $6, $7, $8); for (i = 3; i <= 8; i++) s[i] += $i }
        END { total() }' | tee "$B/coverage.txt"
    echo "coverage: $B/coverage.txt, $B/coverage.tsv, $B/html/<harness>/index.html"
}

T0=$(date +%s)
for h in $TARGETS; do (cd "$ROOT" && target_files "$h" >/dev/null); done
build
echo "coverage: fuzz targets built in $(($(date +%s) - T0)) s"
for h in $TARGETS; do
    replay "$h"
    summarize "$h"
done
report
echo "coverage: done in $(($(date +%s) - T0)) s"

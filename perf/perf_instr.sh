#!/usr/bin/env bash
# perf_instr.sh — instruction counts under callgrind: per prefilled and per decoded token on
# model presets, and per kernel call on fixed shapes, for the ref and avx2 sets; JSON + markdown.
# Not timing (that is `make perf`); counts do not move with the machine's load.
#
#   perf/perf_instr.sh [-b BUILD] [-o OUT.json] [--sets "ref avx2"] [--models "tiny qwen2-0.5b"]
#                      [--quick]
#   perf/perf_instr.sh compare BASE.json CAND.json [--threshold PCT]   (exit 1: a regression)
#
# --quick: the tiny preset only, 1 -> 2 prefilled tokens and 1 decoded (the perf-smoke test).
# Why valgrind and not `perf stat -e instructions`: these VMs expose no hardware counters, and a
# counter would count the whole process (load included) on whatever set the CPU picks; callgrind
# counts the same guest instructions on any x86-64, per phase, through client requests. It has
# no AVX-512, so the avx512 set is not measured.
set -euo pipefail

BUILD=build
OUT=
SETS="ref avx2"
MODELS="tiny qwen2-0.5b"
QUICK=0
# Token counts per preset: prefill P1 and P2 (per token = their difference / (P2 - P1): the
# marginal cost of tokens P1+1..P2, setup and the per-call cost cancel; attention grows with the
# position, so the counts are part of the row's meaning and go into the JSON), decode D steps
# after P2 (each computes the last token's logits, as generation does).
tokens_for() {
    if [ "$QUICK" = 1 ]; then echo "1 2 1"; return; fi
    case "$1" in
    tiny) echo "8 24 8" ;;
    # qwen2-0.5b under ref: ~1.5 G instructions a token, ~10 s under callgrind. P1 and P2 are
    # multiples of 4: the avx2 repacked GEMM takes tokens in tiles of 4, and a marginal token that
    # opens a tile costs more than one inside it (NOTES.md), so 2 -> 4 would count a tile edge.
    *) echo "4 8 2" ;;
    esac
}

die() {
    echo "perf_instr: $*" >&2
    exit 2
}

if [ "${1:-}" = compare ]; then
    shift
    here=$(cd "$(dirname "$0")/.." && pwd)
    tool=
    for b in "${BUILD_DIR:-}" "$here/build"; do
        [ -n "$b" ] && [ -x "$b/perf/instr_compare" ] && tool="$b/perf/instr_compare" && break
    done
    [ -n "$tool" ] || die "instr_compare not built (make, or set BUILD_DIR)"
    exec "$tool" "$@"
fi

while [ $# -gt 0 ]; do
    case "$1" in
    -b) BUILD=$2; shift 2 ;;
    -o) OUT=$2; shift 2 ;;
    --sets) SETS=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --quick) QUICK=1; MODELS=tiny; shift ;;
    *) die "unknown argument '$1'" ;;
    esac
done
[ -n "$OUT" ] || OUT=$BUILD/perf-instr.json

command -v valgrind >/dev/null ||
    die "valgrind is not installed: run 'make deps' (Debian package valgrind)"
for t in perf/instr_kernels perf/instr_model tools/plumb perf/instr_compare; do
    [ -x "$BUILD/$t" ] || die "$BUILD/$t is missing: build first (make; valgrind's headers: make deps)"
done

t_start=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/perf-instr.XXXXXX")
trap 'rm -rf "$work"' EXIT
rows=$work/rows # set name unit instructions, one row a line

# Runs "$@" under callgrind with collection off; the program's client requests dump each
# measured region under its name. Prints "name instructions" per dump, in order.
callgrind_dumps() {
    local dir=$1
    shift
    mkdir -p "$dir"
    valgrind --tool=callgrind --collect-atstart=no --dump-instr=no --compress-strings=no \
        --callgrind-out-file="$dir/cg.out" "$@" >"$dir/stdout" 2>"$dir/log" ||
        { cat "$dir/log" >&2; die "valgrind failed: $*"; }
    local f
    for f in $(ls "$dir"/cg.out.* | sort -t. -k3 -n); do
        awk '/^desc: Trigger: Client Request: / { sub(/^desc: Trigger: Client Request: /, ""); n = $0 }
             /^summary: / { s = $2 } END { if (n != "") print n, s }' "$f"
    done
}

model_path() {
    local p="$BUILD/perf-$1-q8_0.gguf"
    [ -f "$p" ] || "$BUILD/tools/plumb" mkmodel "$p" --preset "$1" --type Q8_0 >/dev/null ||
        die "mkmodel --preset $1 failed"
    echo "$p"
}

for set in $SETS; do
    echo "== $set: kernels" >&2
    callgrind_dumps "$work/k-$set" "$BUILD/perf/instr_kernels" "$set" >"$work/k-$set.counts"
    # Rows the driver announced (name unit) joined with their dumps (name count).
    while read -r name unit1 unit2; do
        n=$(awk -v k="$name" '$1 == k { print $2 }' "$work/k-$set.counts")
        [ -n "$n" ] || die "no callgrind dump for kernel row $name ($set)"
        echo "$set $name $unit1-$unit2 $n" >>"$rows"
    done <"$work/k-$set/stdout"
    for model in $MODELS; do
        read -r p1 p2 d <<<"$(tokens_for "$model")"
        mp=$(model_path "$model")
        echo "== $set: $model (prefill $p1 and $p2, decode $d)" >&2
        callgrind_dumps "$work/m-$set-$model" "$BUILD/perf/instr_model" "$mp" "$set" "$p1" "$p2" "$d" \
            >"$work/m-$set-$model.counts"
        get() {
            local v
            v=$(awk -v k="$1" '$1 == k { print $2 }' "$work/m-$set-$model.counts")
            [ -n "$v" ] || die "no callgrind dump for phase $1 ($set, $model)"
            echo "$v"
        }
        setup=$(get setup)
        i1=$(get "prefill_$p1")
        i2=$(get "prefill_$p2")
        dd=$(get "decode_$d")
        per_pf=$(((i2 - i1) / (p2 - p1)))
        {
            echo "$set $model/setup per-run $setup"
            echo "$set $model/prefill per-token $per_pf"
            echo "$set $model/decode per-token $((dd / d))"
        } >>"$rows"
        echo "$model $p1 $p2 $d" >>"$work/tokens"
    done
done
t_end=$(date +%s)

# ---- JSON ----
jstr() { printf '%s' "$1" | tr -d '"\\' | tr -c '[:print:]' ' '; }
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
dirty=false
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && dirty=true
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo unknown)
cc_ver=$(awk -F= '/^CMAKE_C_COMPILER:/ { print $2 }' "$BUILD/CMakeCache.txt" 2>/dev/null)
[ -n "$cc_ver" ] && cc_ver=$("$cc_ver" --version 2>/dev/null | head -1)
{
    printf '{\n  "schema": "plumb-perf-instr/1",\n'
    printf '  "date": "%s",\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    printf '  "commit": "%s",\n  "dirty": %s,\n' "$commit" "$dirty"
    printf '  "machine": {"cpu": "%s", "kernel": "%s", "hostname": "%s"},\n' \
        "$(jstr "$cpu")" "$(jstr "$(uname -sr)")" "$(jstr "$(hostname)")"
    printf '  "compiler": "%s",\n' "$(jstr "$cc_ver")"
    printf '  "tool": "callgrind",\n  "valgrind": "%s",\n' "$(jstr "$(valgrind --version)")"
    printf '  "sets": [%s],\n' "$(for s in $SETS; do printf '"%s",' "$s"; done | sed 's/,$//')"
    printf '  "tokens": [%s],\n' "$(sort -u "$work/tokens" | awk '{ printf "%s{\"model\": \"%s\", \"prefill\": [%s, %s], \"decode\": %s}", (NR > 1 ? ", " : ""), $1, $2, $3, $4 }')"
    printf '  "seconds": %d,\n' $((t_end - t_start))
    printf '  "rows": [\n'
    awk '{ u = $3; gsub(/-/, " ", u)
           printf "%s    {\"name\": \"%s\", \"set\": \"%s\", \"unit\": \"%s\", \"instructions\": %s}",
                  (NR > 1 ? ",\n" : ""), $2, $1, u, $4 } END { print "" }' "$rows"
    printf '  ]\n}\n'
} >"$OUT.tmp"
"$BUILD/perf/instr_compare" --check "$OUT.tmp" || die "the JSON written does not check ($OUT.tmp)"
mv "$OUT.tmp" "$OUT"

# ---- markdown ----
echo
echo "Instruction counts (callgrind; commit ${commit:0:12}$([ "$dirty" = true ] && echo ' + changes'), $((t_end - t_start)) s)"
echo
printf '| %-28s | %-5s | %-9s | %15s |\n' row set unit instructions
printf '|%s|%s|%s|%s:|\n' "------------------------------" "-------" "-----------" "----------------"
awk '{ u = $3; gsub(/-/, " ", u); printf "| %-28s | %-5s | %-9s | %15s |\n", $2, $1, u, $4 }' "$rows"
echo
echo "JSON: $OUT"

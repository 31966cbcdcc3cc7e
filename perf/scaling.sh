#!/usr/bin/env bash
# scaling.sh — `make perf-scaling` (and the scaling part of `make perf`): plumb against the peers at
# every thread count up to the machine's cores, interleaved per (file, threads), with plumb's % of
# the read roofline (decode) and of the int8 dot peak (prefill) per row, and a check that flags
# every row where plumb with more threads is slower than with fewer. Not the A/B report (perf.sh).
#
#   perf/scaling.sh run    [PLUMB=build/tools/plumb] [THREADS="1 2 4 8 16 N"] [PP=256] [TG=32]
#                          [REPS=2] [FILES="name=mkmodel options;..."] [PEERS=dir] [ENGINES=...]
#                          [OUT=perf/reports] [TOLERANCE=0.03]
#   perf/scaling.sh report FILE.csv [TOLERANCE=0.03]
# run: THREADS defaults to 1, 2, 4, ... below the usable cores and the core count itself; FILES to
# llama-1b Q8_0 and qwen2-0.5b Q4_K_M, made once by `plumb mkmodel` under $OUT/models. PEERS is a
# folder with a `run ENGINE TOOL ARGS` launcher and the peers' llama-bench (../shared/peers here,
# the unpacked .device-bench/peers.tar.xz on the device host; jq reads their JSON); without one,
# plumb runs alone. ENGINES defaults to "plumb ik llama.cpp". Writes scaling-STAMP.csv
# (engine,file,threads,test,tok_s,roofline_pct,int8_pct,wait_share,serial_share) and .md to OUT.
# report: the markdown of such a CSV (the device runs' CSVs have the same columns).
# Exit: 0, 1 when a plumb row is slower with more threads (past TOLERANCE), 2 could not measure.
set -u
cd "$(dirname "$0")/.." || exit 2
MODE=${1:-run}
shift || true
CSV_IN=""
for kv in "$@"; do case $kv in *=*) export "${kv?}" ;; *) CSV_IN=$kv ;; esac; done
TOLERANCE=${TOLERANCE:-0.03}
die() { echo "scaling: $*" >&2; exit 2; }

# report CSV: one table row per (file, test, threads); the flag column marks plumb rows slower
# than plumb at a smaller thread count of the same file and test. Exit 1 when any is flagged.
report() {
    [ -s "$1" ] || die "no CSV at $1"
    awk -F, -v tol="$TOLERANCE" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    {
        e = $col["engine"]; k = $col["file"] SUBSEP $col["test"]; t = $col["threads"] + 0
        v[e, k, t] = $col["tok_s"]
        if (e == "plumb") {
            roof[k, t] = $col["roofline_pct"]; i8[k, t] = $col["int8_pct"]
            if ("wait_share" in col) { ws[k, t] = $col["wait_share"]; ss[k, t] = $col["serial_share"] }
        }
        if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
        if (!(t in tseen)) { tseen[t] = 1; ts[++nt] = t }
    }
    function f(x) { return x == "" ? "-" : sprintf("%.1f", x) }
    function r(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
    function pct(x) { return x == "" ? "-" : sprintf("%.0f%%", x) }
    END {
        for (i = 1; i <= nt; i++) for (j = i + 1; j <= nt; j++) if (ts[j] < ts[i]) { x = ts[i]; ts[i] = ts[j]; ts[j] = x }
        print "| file | test | threads | plumb | ik_llama.cpp | llama.cpp | plumb/ik | plumb/llama.cpp | % roofline (tg) / int8 peak (pp) | wait / serial | more threads slower |"
        print "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
        bad = 0
        for (a = 1; a <= nk; a++) {
            k = keys[a]; split(k, kk, SUBSEP); best = 0; bt = 0
            for (i = 1; i <= nt; i++) {
                t = ts[i]
                if (!(("plumb", k, t) in v) && !(("ik", k, t) in v)) continue
                p = v["plumb", k, t]; flag = ""
                if (p != "" && best > 0 && p < best * (1 - tol)) {
                    flag = sprintf("**SLOWER** than %d threads (%.1f)", bt, best); bad++
                }
                if (p != "" && p > best) { best = p; bt = t }
                share = (t > 1 && (k, t) in ws && ws[k, t] != "") ? sprintf("%.0f%% / %.0f%%", 100 * ws[k, t], 100 * ss[k, t]) : "-"
                print "| " kk[1] " | " kk[2] " | " t " | " f(p) " | " f(v["ik", k, t]) " | " f(v["llama.cpp", k, t]) " | " r(p, v["ik", k, t]) " | " r(p, v["llama.cpp", k, t]) " | " pct(kk[2] ~ /^tg/ ? roof[k, t] : i8[k, t]) " | " share " | " flag " |"
            }
        }
        printf "\n%d plumb row(s) slower with more threads than with fewer (tolerance %.0f%%).\n", bad, 100 * tol
        exit bad > 0
    }' "$1"
}

[ "$MODE" = report ] && { report "$CSV_IN"; exit $?; }
[ "$MODE" = run ] || die "mode '$MODE': run or report"

PLUMB=${PLUMB:-build/tools/plumb}
[ -x "$PLUMB" ] || die "no plumb at $PLUMB (make build, or PLUMB=...)"
OUT=${OUT:-perf/reports}
PP=${PP:-256}
TG=${TG:-32}
REPS=${REPS:-2}
FILES=${FILES:-l1b-q8=--preset llama-1b --type Q8_0;q05-q4km=--preset qwen2-0.5b --type Q4_K_M}
PEERS=${PEERS:-}
[ -z "$PEERS" ] && [ -x ../shared/peers/run ] && PEERS=../shared/peers
ENGINES=${ENGINES:-plumb ik llama.cpp}
if [ -z "${THREADS:-}" ]; then
    n=$(nproc)
    THREADS=""
    for ((t = 1; t < n; t *= 2)); do THREADS="$THREADS $t"; done
    THREADS="$THREADS $n"
fi
mkdir -p "$OUT/models" || die "cannot write $OUT"
stamp=$(date -u +%Y%m%d-%H%M%S)
csv=$OUT/scaling-$stamp.csv
echo "engine,file,threads,test,tok_s,roofline_pct,int8_pct,wait_share,serial_share" >"$csv"
{
    echo "# scaling on $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "threads:$THREADS; pp$PP / tg$TG, $REPS repetitions; peers: ${PEERS:-none}"
} >&2

IFS=';' read -ra specs <<<"$FILES"
for spec in "${specs[@]}"; do
    name=${spec%%=*}
    args=${spec#*=}
    f=$OUT/models/$name.gguf
    # shellcheck disable=SC2086 # the options are words
    [ -s "$f" ] || "$PLUMB" mkmodel "$f" $args >/dev/null || die "mkmodel $name ($args) failed"
    for t in $THREADS; do
        for e in $ENGINES; do
            case $e in
            plumb)
                "$PLUMB" bench -m "$f" -t "$t" -p "$PP" -n "$TG" -r "$REPS" -o csv 2>/dev/null |
                    awk -F, -v n="$name" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                        { print "plumb," n "," $c["n_threads"] "," $c["test"] "," $c["tok_s_median"] "," \
                          $c["roofline_pct"] "," $c["int8_pct"] "," $c["wait_share"] "," $c["serial_share"] }' ;;
            ik | llama.cpp)
                [ -n "$PEERS" ] || continue
                eng=$e extra=""
                [ "$e" = ik ] && eng=ik_llama.cpp extra="-rtr 1"
                # shellcheck disable=SC2086
                "$PEERS/run" "$eng" llama-bench -m "$f" -t "$t" -p "$PP" -n "$TG" -r "$REPS" $extra -o json 2>/dev/null |
                    jq -r --arg e "$e" --arg n "$name" --arg pp "$PP" --arg tg "$TG" '.[] |
                        [$e, $n, .n_threads, (if .n_prompt > 0 then "pp" + $pp else "tg" + $tg end),
                         .avg_ts, "", "", "", ""] | map(tostring) | join(",")' ;;
            esac
        done
    done | tee -a "$csv" >&2
done
report "$csv" | tee "${csv%.csv}.md"
exit "${PIPESTATUS[0]}"

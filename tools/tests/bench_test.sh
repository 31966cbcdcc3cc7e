#!/bin/sh
# bench_test.sh — smoke tests of `plumb bench` (ctest label perf-smoke), one behaviour per CASE:
# the fields of its output and its exit codes on the tiny preset. Never its speed.
#
# usage: bench_test.sh CASE PLUMB JSON_CHECK
set -u
LC_ALL=C
export LC_ALL

case_name=$1 plumb=$2 json_check=$3

tag=bench
. "$(dirname "$0")/testlib.sh"

# A JSON value of KEY that is a number (not null): "key": 1.5
expect_number() { # expect_number FILE KEY
    grep -qE "\"$2\": -?[0-9]" "$1" || fail "$(basename "$1"): \"$2\" is not a number"
}

mkmodel() {
    "$plumb" mkmodel --preset tiny --type Q8_0 "$tmp/m.gguf" >/dev/null 2>"$tmp/err" ||
        { fail "mkmodel failed"; cat "$tmp/err" >&2; exit 1; }
}

case $case_name in
bench_json_has_every_field)
    mkmodel
    run bench -m "$tmp/m.gguf" -p 8 -n 4 -t 1 -r 2 -d 0,16 -o json --probe-mib 64
    expect_rc 0 "bench -o json"
    "$json_check" <"$tmp/out" || fail "the output is not valid JSON"
    for k in '"machine": {' '"cpu": ' '"flags": [' '"topology": ' '"bindings": [' \
        '"build": {' '"commit": ' '"compiler": ' '"build_type": ' '"probes": {' \
        '"read_gbps": [' '"int8_gops": [' '"results": [' '"test": "pp8"' '"test": "tg4"' \
        '"tok_s": {"median": ' '"latency_ms": {"p50": ' '"p99": ' '"peak_rss": ' \
        '"kernels": "' '"repacked": ' '"repack": {"set": ' '"roofline_pct": ' '"load_ms": ' \
        '"n_threads": 1' '"pus": [' '"thread":0' '"depth": [0, 16]' '"background_load": [0]' \
        '"test": "pp8 @ d16", "n_prompt": 8, "n_gen": 0, "depth": 16, "background_load": 0' \
        '"test": "tg4 @ d16", "n_prompt": 1, "n_gen": 4, "depth": 16' '"depth": 0,' \
        '"background_load_cpus": "'; do
        expect_in "$tmp/out" "$k"
    done
    for k in median p50 p90 p99 peak_rss load_ms best bytes_per_token roofline_pct attention_share; do
        expect_number "$tmp/out" "$k"
    done
    # Progress went to stderr, naming the model, the set, the threads and the repetition.
    expect_in "$tmp/err" "m set "
    expect_in "$tmp/err" "threads 1: tg4 rep 2/2"
    expect_in "$tmp/err" "threads 1: filling the cache to depth 16"
    # A decode row at depth 16 attends to 16 more entries on average than at depth 0.
    grep -q '"avg_n_past": 19.5' "$tmp/out" || fail "tg4 @ d16: avg_n_past is not 16 + 1 + 2.5"
    # Attention's share of the timed steps: a fraction in (0, 1) on every row.
    grep -o '"attention_share": [^,}]*' "$tmp/out" | awk '{ if (!($2 > 0 && $2 < 1)) bad = 1; n++ }
        END { exit bad || n < 4 }' || fail "attention_share is not in (0, 1) on every row"
    # --no-probe: the same document, the rates and shares null.
    run bench -m "$tmp/m.gguf" -p 0 -n 2 -t 1 -r 1 -o json --no-probe
    expect_rc 0 "bench --no-probe"
    "$json_check" <"$tmp/out" || fail "--no-probe: the output is not valid JSON"
    expect_in "$tmp/out" '"roofline_pct": null'
    expect_in "$tmp/out" '"measured": false'
    ;;

bench_md_and_csv_have_rows)
    mkmodel
    run bench -m "$tmp/m.gguf" -p 8 -n 4 -t 1,2 -r 1 --probe-mib 16 --kernels ref
    expect_rc 0 "bench -o md"
    expect_in "$tmp/out" "| model | size | params | kernels | threads |"
    expect_in "$tmp/out" "| ref | 1 | no | pp8 |"
    expect_in "$tmp/out" "| ref | 2 | no | tg4 |"
    expect_in "$tmp/out" "build: "
    expect_in "$tmp/out" "read "
    [ "$(grep -c '^| m ' "$tmp/out")" -eq 4 ] || fail "want 4 rows (2 tests x 2 thread counts)"
    grep -q ' load |' "$tmp/out" && fail "a load column with no background load"
    # Depths and background load: one row per test x depth x load, the load in its column.
    run bench -m "$tmp/m.gguf" -p 8 -n 2 -t 1 -r 1 -d 0,4 --background-load 0,1 --no-probe
    expect_rc 0 "bench -d 0,4 --background-load 0,1"
    expect_in "$tmp/out" "| repack | load | test |"
    expect_in "$tmp/out" "| 0 | pp8 |"
    expect_in "$tmp/out" "| 1 | pp8 |"
    expect_in "$tmp/out" "| 1 | pp8 @ d4 |"
    expect_in "$tmp/out" "| 0 | tg2 @ d4 |"
    expect_in "$tmp/out" "background load: "
    [ "$(grep -c '^| m ' "$tmp/out")" -eq 8 ] || fail "want 8 rows (2 tests x 2 depths x 2 loads)"
    # The busy processes are gone with the bench (they share its command line until killed).
    ps -eo args 2>/dev/null | grep -F -- "$tmp/m.gguf" | grep -qv grep &&
        fail "a background load process outlived the bench"
    run bench -m "$tmp/m.gguf" -p 8 -n 0 -t 1 -r 1 --no-probe -o csv
    expect_rc 0 "bench -o csv"
    expect_in "$tmp/out" "model,path,arch,ftype,"
    expect_in "$tmp/out" ",int8_pct,depth,background_load"
    [ "$(wc -l <"$tmp/out" | tr -d ' ')" -eq 2 ] || fail "csv: want a header and 1 row"
    # Counts are integers, never "1.23457e+09" (the model and path hold no comma here).
    macs=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "macs_per_token") c = i }
                    NR == 2 { print $c }' "$tmp/out")
    printf '%s\n' "$macs" | grep -Eq '^[0-9]+$' || fail "csv: macs_per_token '$macs' is not an integer"
    run bench -m "$tmp/m.gguf" -p 8 -n 0 -t 1 -r 1 -d 4 --background-load 1 --no-probe -o csv
    expect_rc 0 "bench -o csv -d 4 --background-load 1"
    expect_in "$tmp/out" ",pp8 @ d4,8,0,"
    dl=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
                  NR == 2 { print $c["depth"] "," $c["background_load"] }' "$tmp/out")
    [ "$dl" = "4,1" ] || fail "csv: depth,background_load is '$dl', want 4,1"
    # The profile columns: shares in [0, 1] (or empty), regions per token, benched regions.
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
             NR == 2 { w = $c["wait_share"]; s = $c["serial_share"]
                       exit !(c["runs_per_token"] && c["benched_runs"] && (w == "" || (w >= 0 && w <= 1)) &&
                              (s == "" || (s >= 0 && s <= 1))) }' "$tmp/out" ||
        fail "csv: wait_share/serial_share/runs_per_token/benched_runs missing or out of range"
    ;;

bench_bad_usage_exits_2)
    mkmodel
    for args in "" "-p 8" "-m $tmp/m.gguf -o xml" "-m $tmp/m.gguf -p 8,x" \
        "-m $tmp/m.gguf -p 0 -n 0" "-m $tmp/m.gguf -t 0" "-m $tmp/m.gguf -r 0" \
        "-m $tmp/m.gguf --bogus" "-m $tmp/m.gguf extra" "-m $tmp/m.gguf --no-probe=1" \
        "-m $tmp/m.gguf --kernels ," "-m $tmp/m.gguf -d -1" "-m $tmp/m.gguf -d 4,x" \
        "-m $tmp/m.gguf --background-load -1" "-m $tmp/m.gguf --background-load 100000"; do
        # shellcheck disable=SC2086 # word splitting is the point
        run bench $args
        expect_rc 2 "bench $args"
        expect_in "$tmp/err" "plumb bench: error: "
        expect_in "$tmp/err" "see \`plumb bench --help\`"
    done
    run bench --help
    expect_rc 0 "bench --help"
    expect_in "$tmp/out" "usage: plumb bench"
    ;;

bench_missing_model_exits_1)
    run bench -m "$tmp/absent.gguf" -p 8 -n 0 -r 1 --no-probe
    expect_rc 1 "bench of a missing file"
    expect_in "$tmp/err" "$tmp/absent.gguf"
    mkmodel
    run bench -m "$tmp/m.gguf" -p 8 -n 0 -r 1 --no-probe --kernels nosuchset
    expect_rc 1 "bench with an unknown kernel set"
    expect_in "$tmp/err" "nosuchset"
    # The tiny preset was trained for 256 positions: depth 250 + pp8 does not fit.
    run bench -m "$tmp/m.gguf" -p 8 -n 0 -r 1 -d 250 --no-probe
    expect_rc 1 "bench with depth + test past the model's context"
    expect_in "$tmp/err" "depth 250 + the longest test (8 tokens) needs a context of 258 tokens"
    expect_in "$tmp/err" "n_ctx_train"
    ;;

*)
    echo "unknown case $case_name" >&2
    exit 2
    ;;
esac

[ "$failures" -eq 0 ] || exit 1
exit 0

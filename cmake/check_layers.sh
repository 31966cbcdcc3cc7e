#!/bin/sh
# check_layers.sh — keeps the tree's layers (README.md, "Architecture") from eroding: fails,
# naming file, line and include (or symbol), when a dependency points the wrong way or closes a
# circle. Not a build step: it reads sources (includes) or built objects (symbols) and judges.
#
# usage: check_layers.sh includes ROOT            every #include "..." under ROOT's engine/,
#                                                 kernels/, synth/, tools/, conformance/, fuzz/,
#                                                 perf/, examples/, and their CMake files
#        check_layers.sh symbols ROOT OBJECT...   which object calls which (nm), for the
#                                                 engine's and the kernels' objects
# Exit status: 0 clean, 1 a problem (each printed on stderr), 2 bad usage.
#
# The rules, bottom to top: kernels <- core <- jinja <- gguf <- tokenizer <- runtime <- features.
#   engine/<layer>/  may use its own and lower layers, kernels/*.h and plumb.h; a kernel set's
#                    own files (kernels/<set>/) only through struct pl_kernels, never by name
#   kernels/         kernels/ only: not even plumb.h (kernels/pl_base.h holds what they share)
#   synth/ serve/    plumb.h only (clients of the public API)
#   tools/           plumb.h, synth/, serve/, kernels/*.h (`plumb kernels`): no engine internals
#   conformance/ fuzz/ perf/  anything but tools/ (white-box tests may use internal headers)
#   examples/        plumb.h only (they build against the install)
# and no circles: between files (x.c and x.h count as one file, so a pair of files that include
# each other's header is a circle) for includes, between objects for calls.
set -u
LC_ALL=C
export LC_ALL

usage() {
    echo "usage: $0 includes ROOT | $0 symbols ROOT OBJECT..." >&2
    exit 2
}
[ $# -ge 2 ] || usage
mode=$1 root=$2
shift 2
[ -d "$root" ] || { echo "check_layers: no directory $root" >&2; exit 2; }

# Shared by both modes: where a path lives, and whether one place may use another.
RULES='
function zone(p,   a, n) {
    n = split(p, a, "/")
    if (a[1] == "engine") {
        if (n >= 3 && a[2] == "include") return "public"
        if (n >= 3 && a[2] in rank) return "engine/" a[2]
        return "engine?"
    }
    if (a[1] == "kernels") return n == 2 ? "kernels" : "kernel-set"
    if (a[1] == "conformance" || a[1] == "fuzz" || a[1] == "perf") return "tests"
    if (a[1] == "synth" || a[1] == "serve" || a[1] == "tools" || a[1] == "examples") return a[1]
    return "other"
}
# "" when code in zone f may use code in zone t, else the rule it breaks. Tests may use
# everything but tools/ (serve/ is a library they link, as synth/ is).
function why_not(f, t) {
    if (f == "engine?") return "engine sources live in a layer folder: engine/{core,jinja,gguf,tokenizer,runtime,features}/"
    if (t == "engine?") return "engine/ has no such layer folder (known: core, jinja, gguf, tokenizer, runtime, features)"
    if (f == "public") return "plumb.h includes nothing of the tree (it is installed alone)"
    if (t == "public" && (f == "kernels" || f == "kernel-set")) return "kernels do not include plumb.h: the vocabulary they share with it is kernels/pl_base.h"
    if (t == "public" || t == f) return ""
    if (f ~ /^engine\//) {
        if (t ~ /^engine\//)
            return rank[substr(t, 8)] <= rank[substr(f, 8)] ? "" : substr(f, 8) " is below " substr(t, 8) " and may not use it"
        if (t == "kernels") return ""
        if (t == "kernel-set") return "the engine uses a kernel set only through struct pl_kernels, never by name"
        return "the engine uses only engine/ and kernels/"
    }
    if (f == "kernels" || f == "kernel-set")
        return t == "kernels" || t == "kernel-set" ? "" : "kernels use nothing in engine/"
    if (f == "synth" || f == "serve") return f "/ uses only the public API (plumb.h)"
    if (f == "tools") return t == "synth" || t == "serve" || t == "kernels" ? "" : "the CLI uses plumb.h, synth/, serve/ and kernels/*.h, not engine internals"
    if (f == "tests") return t == "tools" ? "no test, harness or benchmark uses a file of tools/ (shared helpers go to synth/)" : ""
    if (f == "examples") return "examples use only the installed header, plumb.h"
    return ""
}
function unit(p) { sub(/\.[ch]$/, "", p); return p }
# Depth-first search for circles over edge[a SUBSEP b]; reports each back edge once.
function dfs(u,   v, i, k, path, whys) {
    color[u] = 1
    stack[++depth] = u
    for (k = 1; k <= nadj[u]; k++) {
        v = adj[u, k]
        if (color[v] == 1) {
            i = depth
            while (i > 1 && stack[i] != v) i--
            path = v; whys = ""
            for (; i < depth; i++) {
                path = path " -> " stack[i + 1]
                whys = whys "\n  " WHY[stack[i] SUBSEP stack[i + 1]]
            }
            printf "%s: %s -> %s%s\n  %s\n", CYCLE, path, v, whys, WHY[u SUBSEP v] > "/dev/stderr"
            bad++
        } else if (!color[v])
            dfs(v)
    }
    depth--
    color[u] = 2
}
function edge(a, b, why) {
    if ((a, b) in seen) return
    seen[a, b] = 1
    adj[a, ++nadj[a]] = b
    WHY[a SUBSEP b] = why
    if (!(a in isnode)) { isnode[a] = 1; node[++nnode] = a }
    if (!(b in isnode)) { isnode[b] = 1; node[++nnode] = b }
}
function cycles(   i) { for (i = 1; i <= nnode; i++) if (!color[node[i]]) dfs(node[i]) }
# The unique file in files[] that p names: p itself, or the one whose path ends in "/" p.
function resolve(p,   f, hit, n) {
    if (p in files) return p
    n = 0
    for (f in files)
        if (substr(f, length(f) - length(p)) == "/" p) { hit = f; n++ }
    return n == 1 ? hit : n == 0 ? "" : "?"
}
function normalize(p,   a, n, i, out, k, o) {
    n = split(p, a, "/")
    k = 0
    for (i = 1; i <= n; i++) {
        if (a[i] == "." || a[i] == "") continue
        if (a[i] == ".." && k > 0) { k--; continue }
        o[++k] = a[i]
    }
    out = o[1]
    for (i = 2; i <= k; i++) out = out "/" o[i]
    return out
}
BEGIN {
    rank["core"] = 1; rank["jinja"] = 2; rank["gguf"] = 3; rank["tokenizer"] = 4; rank["runtime"] = 5; rank["features"] = 6
    ORDER = "kernels <- core <- jinja <- gguf <- tokenizer <- runtime <- features"
}
'

cd "$root" || exit 2
list=$(mktemp "${TMPDIR:-/tmp}/check_layers.XXXXXX") || exit 2
trap 'rm -f "$list"' EXIT
trap 'exit 2' HUP INT TERM

case $mode in
includes)
    # One record per line: "F <file>" for every source, "I <file> <line> <target>" per include,
    # "M <file> <line> <text>" per CMake line of a test area that names tools/.
    for d in engine kernels synth serve tools conformance fuzz perf examples; do
        [ -d "$d" ] && find "$d" -type f \( -name '*.c' -o -name '*.h' \)
    done | sort >"$list"
    {
        sed 's/^/F /' "$list"
        while IFS= read -r f; do
            awk -v f="$f" '
                /^[ \t]*#[ \t]*include[ \t]*"/ {
                    s = $0; sub(/^[^"]*"/, "", s); sub(/".*$/, "", s)
                    print "I", f, FNR, s
                }' "$f"
        done <"$list"
        for d in conformance fuzz perf examples; do
            [ -d "$d" ] && find "$d" -type f \( -name '*.cmake' -o -name CMakeLists.txt \)
        done | sort | while IFS= read -r f; do
            awk -v f="$f" '{ s = $0; sub(/#.*$/, "", s) }
                s ~ /\/tools([\/ )"]|$)/ { print "M", f, FNR, $0 }' "$f"
        done
    } | awk "$RULES"'
        $1 == "F" { files[$2] = 1; nfiles++; next }
        $1 == "M" {
            line = $0; sub(/^M [^ ]* [0-9]* */, "", line)
            printf "%s:%s: %s\n  names a file of tools/: no test, harness or benchmark builds with tools/ (shared helpers go to synth/)\n", $2, $3, line > "/dev/stderr"
            bad++; next
        }
        $1 == "I" {
            f = $2; inc = $4; nincs++
            dir = f; sub(/\/[^\/]*$/, "", dir)
            t = normalize(dir "/" inc)
            if (!(t in files)) t = resolve(inc)
            if (t == "") next   # not ours (a system or generated header)
            if (t == "?") {
                printf "%s:%s: #include \"%s\": more than one file ends so; name its folder\n", f, $3, inc > "/dev/stderr"
                bad++; next
            }
            w = why_not(zone(f), zone(t))
            if (w != "") {
                printf "%s:%s: #include \"%s\" (%s): %s\n", f, $3, inc, t, w > "/dev/stderr"
                bad++
            }
            if (unit(f) != unit(t)) edge(unit(f), unit(t), f " includes " t)
        }
        END {
            CYCLE = "include circle"
            cycles()
            if (bad) {
                printf "check_layers: %d problem(s) in the includes; the layers, bottom to top: %s\n", bad, ORDER > "/dev/stderr"
                exit 1
            }
            printf "check_layers: %d files, %d includes: no wrong-way include, no circle\n", nfiles, nincs
        }'
    ;;
symbols)
    [ $# -ge 1 ] || usage
    # "F <file>" per source under engine/ and kernels/, "O <object> <source path it came
    # from, relative to its target>", then from nm "D <symbol> <object> <nm type>" for what
    # an object defines and "U <symbol> <object>" for what it uses.
    for d in engine kernels; do
        [ -d "$d" ] && find "$d" -type f -name '*.c'
    done | sort | sed 's/^/F /' >"$list"
    for o in "$@"; do
        [ -f "$o" ] || { echo "check_layers: no object $o" >&2; exit 2; }
        rel=${o##*.dir/}
        echo "O $o ${rel%.o}"
    done >>"$list"
    # One nm for all objects: "OBJECT:ADDRESS TYPE SYMBOL", or "OBJECT: U SYMBOL" for a use.
    nm -A -g "$@" | awk '{
        match($0, /\.o:/); o = substr($0, 1, RSTART + 1); n = split(substr($0, RSTART + 3), a, " ")
        if (n == 3) print "D", a[3], o, a[2]; else if (n == 2 && a[1] == "U") print "U", a[2], o
    }' >>"$list" || exit 2
    awk "$RULES"'
        $1 == "F" { files[$2] = 1; next }
        $1 == "O" {
            # An object of target T is CMakeFiles/T.dir/<path of its source under engine/ or kernels/>.o
            e = ("engine/" $3) in files
            k = ("kernels/" $3) in files
            src[$2] = e == k ? "" : e ? "engine/" $3 : "kernels/" $3
            nobj++
            if (src[$2] == "") {
                printf "%s: cannot tell which source under engine/ or kernels/ it was built from (%s)\n", $2, $3 > "/dev/stderr"
                bad++
            }
            next
        }
        $1 == "D" { def[$2] = src[$3]; code[$2] = $4 ~ /^[TtWi]$/; next }
        $1 == "U" { nu++; use[nu] = $2; user[nu] = src[$3] }
        END {
            for (i = 1; i <= nu; i++) {
                if (!(use[i] in def)) continue   # libc, PCRE2, hwloc, sanitizers
                f = user[i]; t = def[use[i]]
                if (f == t || f == "" || t == "") continue
                w = why_not(zone(f), zone(t))
                # The table of a set (data: struct pl_kernels) may be named, never its functions.
                if (zone(t) == "kernel-set" && !code[use[i]]) w = ""
                if (w != "" && !((f, t) in told)) {
                    told[f, t] = 1
                    printf "%s calls %s (%s): %s\n", f, use[i], t, w > "/dev/stderr"
                    bad++
                }
                edge(f, t, f " calls " use[i])
            }
            CYCLE = "call circle"
            cycles()
            if (bad) {
                printf "check_layers: %d problem(s) in the calls; the layers, bottom to top: %s\n", bad, ORDER > "/dev/stderr"
                exit 1
            }
            printf "check_layers: %d objects: no wrong-way call, no circle\n", nobj
        }' "$list"
    ;;
*)
    usage
    ;;
esac

#!/bin/sh
# check_layers_test.sh — proves that check_layers.sh can fail: each CASE builds a small tree
# that follows the layers, plants one wrong-way dependency or circle (or none), and checks the
# verdict and that the message names the file and the include or symbol.
#
# usage: check_layers_test.sh CASE CHECK_LAYERS_SH CC
set -u
LC_ALL=C
export LC_ALL

case_name=$1 check=$2 cc=$3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/plumb-layers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
root=$tmp/tree

failures=0
fail() {
    echo "FAIL [$case_name]: $*" >&2
    failures=$((failures + 1))
}

put() { # put PATH LINE...: writes the lines to $root/PATH
    mkdir -p "$(dirname "$root/$1")"
    f=$1
    shift
    printf '%s\n' "$@" >"$root/$f"
}

# The layered tree: each layer uses the one below, a test uses an internal header, the CLI
# uses plumb.h, the runtime names the ref set's table (data, allowed).
put engine/include/plumb.h 'int pl_version(void);'
put engine/core/core.h '#include "plumb.h"' 'int core_fn(void);'
put engine/core/core.c '#include "core.h"' 'int core_fn(void) { return 1; }'
put engine/gguf/gguf.c '#include "core/core.h"' 'int gguf_fn(void) { return core_fn(); }'
put engine/tokenizer/tok.h '#include "core/core.h"' 'int tok_fn(void);'
put engine/tokenizer/tok.c '#include "tok.h"' 'int gguf_fn(void);' \
    'int tok_fn(void) { return gguf_fn(); }'
put engine/runtime/run.c '#include "tokenizer/tok.h"' '#include "kernels.h"' \
    'int run_fn(void) { return tok_fn() + pl_kernels_ref.n; }'
put kernels/pl_base.h 'typedef int pl_status;'
put kernels/kernels.h '#include "pl_base.h"' 'struct pl_kernels { int n; };' \
    'extern const struct pl_kernels pl_kernels_ref;' 'int matmul_ref(void);'
put kernels/ref/set.c '#include "kernels.h"' 'const struct pl_kernels pl_kernels_ref = {1};' \
    'int matmul_ref(void) { return 2; }'
put conformance/test_tok.c '#include "tokenizer/tok.h"'
put tools/cli.h '#include "plumb.h"'
put tools/main.c '#include "cli.h"'
put synth/gen.c '#include "plumb.h"'
put fuzz/fuzz.cmake 'add_executable(fuzz_x fuzz_x.c)  # not tools/cli.c'

includes() { # runs the include check; status -> $rc, stderr -> $tmp/err
    sh "$check" includes "$root" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

calls() { # compiles every engine/ and kernels/ source, runs the call check on the objects
    objs=
    for src in $(cd "$root" && find engine kernels -name '*.c' | sort); do
        top=${src%%/*}
        o=$tmp/build/CMakeFiles/$top.dir/${src#*/}.o
        mkdir -p "$(dirname "$o")"
        "$cc" -c -I"$root/engine/include" -I"$root/engine" -I"$root/kernels" "$root/$src" \
            -o "$o" || { fail "cannot compile $src"; return; }
        objs="$objs $o"
    done
    # shellcheck disable=SC2086 # one argument per object
    sh "$check" symbols "$root" $objs >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

expect_rc() { # expect_rc WANT DESCRIPTION
    if [ "$rc" -ne "$1" ]; then
        fail "$2: exit status $rc, want $1"
        sed 's/^/  stderr: /' "$tmp/err" >&2
    fi
}

expect_err() { # expect_err FIXED-STRING: the check's stderr names it
    if ! grep -qF -- "$1" "$tmp/err"; then
        fail "the message lacks: $1"
        sed 's/^/  | /' "$tmp/err" >&2
    fi
}

case $case_name in
layers_check_accepts_a_layered_tree)
    includes
    expect_rc 0 "includes of the layered tree"
    calls
    expect_rc 0 "calls of the layered tree"
    ;;
layers_check_rejects_a_wrong_way_include)
    put engine/gguf/gguf.c '#include "core/core.h"' '#include "tokenizer/tok.h"'
    includes
    expect_rc 1 "gguf including the tokenizer"
    expect_err 'engine/gguf/gguf.c:2: #include "tokenizer/tok.h" (engine/tokenizer/tok.h): gguf is below tokenizer'
    ;;
layers_check_rejects_kernels_including_the_engine)
    put kernels/ref/set.c '#include "kernels.h"' '#include "core/core.h"'
    includes
    expect_rc 1 "a kernel set including core.h"
    expect_err 'kernels/ref/set.c:2: #include "core/core.h" (engine/core/core.h): kernels use nothing in engine/'
    ;;
layers_check_rejects_kernels_including_plumb_h)
    put kernels/ref/set.c '#include "kernels.h"' '#include "plumb.h"' \
        'const struct pl_kernels pl_kernels_ref = {1};' 'int matmul_ref(void) { return 2; }'
    includes
    expect_rc 1 "a kernel set including the public header"
    expect_err 'kernels/ref/set.c:2: #include "plumb.h" (engine/include/plumb.h): kernels do not include plumb.h'
    ;;
layers_check_rejects_tests_that_use_tools)
    put perf/bench.c '#include "plumb.h"' '#include "cli.h"'
    # shellcheck disable=SC2016 # CMake's ${...}, not the shell's
    put fuzz/fuzz.cmake 'add_executable(fuzz_x fuzz_x.c ${PROJECT_SOURCE_DIR}/tools/cli.c)'
    includes
    expect_rc 1 "a benchmark including tools/cli.h, a harness compiling tools/cli.c"
    expect_err 'perf/bench.c:2: #include "cli.h" (tools/cli.h): no test, harness or benchmark uses a file of tools/'
    # shellcheck disable=SC2016
    expect_err 'fuzz/fuzz.cmake:1: add_executable(fuzz_x fuzz_x.c ${PROJECT_SOURCE_DIR}/tools/cli.c)'
    ;;
layers_check_rejects_an_include_circle)
    put engine/tokenizer/a.h 'int a_fn(void);'
    put engine/tokenizer/b.h 'int b_fn(void);'
    put engine/tokenizer/a.c '#include "a.h"' '#include "b.h"'
    put engine/tokenizer/b.c '#include "b.h"' '#include "a.h"'
    includes
    expect_rc 1 "a.c and b.c including each other's header"
    expect_err 'include circle: engine/tokenizer/a -> engine/tokenizer/b -> engine/tokenizer/a'
    expect_err 'engine/tokenizer/b.c includes engine/tokenizer/a.h'
    ;;
layers_check_rejects_a_wrong_way_call)
    put engine/gguf/gguf.c '#include "core/core.h"' 'int tok_fn(void);' \
        'int gguf_fn(void) { return core_fn(); }' 'int gguf_peek(void) { return tok_fn(); }'
    includes
    expect_rc 0 "includes (the call hides behind a local declaration)"
    calls
    expect_rc 1 "gguf calling the tokenizer"
    expect_err 'engine/gguf/gguf.c calls tok_fn (engine/tokenizer/tok.c): gguf is below tokenizer'
    ;;
layers_check_rejects_a_call_circle)
    put engine/tokenizer/a.c 'int b_fn(void);' 'int a_fn(int n) { return n ? b_fn() : 0; }'
    put engine/tokenizer/b.c 'int a_fn(int n);' 'int b_fn(void) { return a_fn(0); }'
    calls
    expect_rc 1 "a.c and b.c calling each other"
    expect_err 'call circle: engine/tokenizer/a.c -> engine/tokenizer/b.c -> engine/tokenizer/a.c'
    ;;
layers_check_rejects_calling_a_kernel_by_name)
    put engine/runtime/run.c '#include "tokenizer/tok.h"' '#include "kernels.h"' \
        'int run_fn(void) { return tok_fn() + matmul_ref(); }'
    calls
    expect_rc 1 "the runtime calling matmul_ref by name"
    expect_err 'engine/runtime/run.c calls matmul_ref (kernels/ref/set.c): the engine uses a kernel set only through struct pl_kernels'
    ;;
*)
    fail "unknown case"
    ;;
esac

[ "$failures" -eq 0 ]

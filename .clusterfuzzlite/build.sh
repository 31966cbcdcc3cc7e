#!/bin/bash -eu
set -o pipefail
# .clusterfuzzlite/build.sh — builds every fuzz/fuzz_<name>.c harness as a libFuzzer target for
# ClusterFuzzLite or OSS-Fuzz, from the variables the service sets: CC, CFLAGS (a sanitizer and
# -fsanitize=fuzzer-no-link), LIB_FUZZING_ENGINE (-fsanitize=fuzzer) and OUT (WORK, SRC when
# set). Into $OUT: fuzz_<name>, fuzz_<name>_seed_corpus.zip (corpus/ and regressions/),
# fuzz_<name>.dict, and lib/ with the shared libraries the targets need beyond the C library
# (the runner image has none of them; the targets find them through RPATH $ORIGIN/lib: DT_RPATH,
# not RUNPATH, because only the former also serves the libraries' own dependencies, such as
# libmicrohttpd's GnuTLS).
# fuzz/cflite-check.sh runs it here as the service would and replays every target.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ -f "$ROOT/fuzz/fuzz.cmake" ] || ROOT=${SRC:?}/plumb # the service runs a copy in $SRC
: "${CC:?}" "${CFLAGS:?}" "${LIB_FUZZING_ENGINE:?}" "${OUT:?}"
BUILD=${WORK:-$ROOT}/build-cflite
HARNESSES=$(cd "$ROOT/fuzz" && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//')

# CMAKE_BUILD_TYPE Fuzzing has no flags of its own: CFLAGS decide (the default, Release, would
# add -O3 -DNDEBUG after them). No hwloc: pinning threads is no use to a fuzz target.
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS" \
    -DCMAKE_BUILD_TYPE=Fuzzing -DPLUMB_BUILD_TESTS=OFF -DPLUMB_HWLOC=OFF \
    -DPLUMB_FUZZ_ENGINE="$LIB_FUZZING_ENGINE" '-DCMAKE_BUILD_RPATH=$ORIGIN/lib' \
    -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags
targets=()
for h in $HARNESSES; do targets+=("fuzz_$h"); done
cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}"

mkdir -p "$OUT/lib"
for h in $HARNESSES; do
    cp "$BUILD/fuzz/fuzz_$h" "$OUT/"
    # The seed corpus: corpus/ and regressions/ (prefixed: the two may share file names).
    seeds="$BUILD/seeds/$h"
    rm -rf "$seeds" "$OUT/fuzz_${h}_seed_corpus.zip"
    mkdir -p "$seeds"
    for d in corpus regressions; do
        [ -d "$ROOT/fuzz/$d/$h" ] || continue
        find "$ROOT/fuzz/$d/$h" -type f ! -name '.*' | while IFS= read -r f; do
            rel=${f#"$ROOT/fuzz/$d/$h/"}
            cp "$f" "$seeds/$d-${rel//\//_}"
        done
    done
    (cd "$seeds" && zip -q -r "$OUT/fuzz_${h}_seed_corpus.zip" .)
    [ ! -f "$ROOT/fuzz/dict/$h.dict" ] || cp "$ROOT/fuzz/dict/$h.dict" "$OUT/fuzz_$h.dict"
    # Shared libraries other than the C runtime's own go beside the targets.
    ldd "$OUT/fuzz_$h" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r lib; do
        [ "${lib%/*}" != "$OUT/lib" ] || continue # an earlier target's copy, found by RUNPATH
        case ${lib##*/} in
        libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) ;;
        libgcc_s.so.* | libstdc++.so.*) ;;
        *) cp -L "$lib" "$OUT/lib/" ;;
        esac
    done
done

#!/bin/sh
# bench-run.sh — .gpu-bench/run.sh (kernels/webgpu/pack-bench.sh puts it there): the webgpu
# set's benchmark on a machine with a GPU and nothing installed. Unpacks node, dawn.node and
# plumb into $PLUMB_BENCH_TMP (default /tmp/plumb-gpu-bench), the Vulkan loader too where the
# machine has none (into that folder, on LD_LIBRARY_PATH: nothing is written outside it), points
# the loader at the NVIDIA ICD if it is not where the loader looks, asks Dawn for an adapter
# (exit 2 with the reason if there is none), makes the two models with `plumb mkmodel` (random
# weights, real widths) and runs bench-node.mjs on them; prints the markdown table and leaves
# it, the JSON and the log in $OUT (or the temp folder).
#   sh .gpu-bench/run.sh [--n-layer-8b N (default 8)] [bench-node options: --pp N --tg N ...]
# Models: llama-1b Q8_0 (--pure: every matrix Q8_0; 16 layers, the real file), and an 8B's
# widths (E 4096, F 14336, H 32, Hkv 8, V 128256) with N of its 32 layers, twice: Q4_K (--pure)
# and the Q4_K_M mix (Q6_K attn_v, ffn_down and head): decode's GB/s and % of copy are the
# per-layer comparison (the head and the layers read at the same rate); tok/s is of the N-layer
# file, not of an 8B.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=${PLUMB_BENCH_TMP:-/tmp/plumb-gpu-bench}
out=${OUT:-$tmp/out}
n8=8
if [ "${1:-}" = "--n-layer-8b" ]; then n8=$2; shift 2; fi
mkdir -p "$tmp/bin" "$tmp/lib" "$tmp/webgpu/dist/linux-x64" "$tmp/models" "$out"

unxz_to() { # unxz_to SRC.xz DST: xz where the machine has it, else python3's lzma
  [ -f "$2" ] && return 0
  if command -v xz >/dev/null 2>&1; then xz -dc "$1" > "$2.tmp"
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2.tmp"
  else echo "run.sh: neither xz nor python3 here to unpack $1"; exit 1; fi
  mv "$2.tmp" "$2"
}
unxz_to "$here/node.xz" "$tmp/bin/node"
unxz_to "$here/plumb.xz" "$tmp/bin/plumb"
chmod +x "$tmp/bin/node" "$tmp/bin/plumb"
cp "$here/webgpu/index.js" "$here/webgpu/package.json" "$tmp/webgpu/"
unxz_to "$here/webgpu/dist/linux-x64/dawn.node.xz" "$tmp/webgpu/dist/linux-x64/dawn.node"

# libraries: plumb's always from the bundle; libstdc++/libgcc_s only where the machine lacks them
libs=$here/lib
for l in libstdc++.so.6 libgcc_s.so.1; do
  ldconfig -p 2>/dev/null | grep -q "$l" || cp "$here/lib/fallback-$l" "$tmp/lib/$l"
done
# the Vulkan loader, unpacked here (not into /) where the machine has none
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1 '; then
  [ -d "$tmp/vulkan" ] || { mkdir -p "$tmp/vulkan" && for d in "$here"/deb/*.deb; do dpkg-deb -x "$d" "$tmp/vulkan"; done; }
  libs=$libs:$tmp/vulkan/usr/lib/x86_64-linux-gnu
  echo "run.sh: Vulkan loader from the bundle ($(ls "$here"/deb))"
fi
export LD_LIBRARY_PATH="$tmp/lib:$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# the NVIDIA ICD where the loader does not look by itself
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then
  found=
  for d in /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/share/vulkan/icd.d; do
    [ -f "$d/nvidia_icd.json" ] && found=1
  done
  if [ -z "$found" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    echo "run.sh: VK_DRIVER_FILES=$VK_DRIVER_FILES"
  fi
fi
export PLUMB_WEBGPU_NODE="$tmp/webgpu/index.js"
node=$tmp/bin/node
"$node" --version >/dev/null || { echo "run.sh: node does not run here (ldd: $(ldd "$node" | grep 'not found' | tr '\n' ' '))"; exit 1; }
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/run.sh: nvidia-smi: /'

# an adapter, or why not (before the minutes of making models)
set +e
"$node" "$here/kernels/bench-node.mjs" --probe
rc=$?
set -e
if [ $rc -ne 0 ]; then
  echo "run.sh: FAIL: Dawn finds no usable WebGPU adapter on this machine (above); nothing benchmarked."
  echo "  (On a machine with an NVIDIA GPU: is libnvidia's Vulkan ICD there, nvidia_icd.json? DAWN_FLAGS=backend=vulkan?)"
  exit 2
fi

# the models (seconds with every core; made once per $tmp)
m1=$tmp/models/llama-1b-q8_0.gguf
m8=$tmp/models/llama-8b-width-q4_k-${n8}l.gguf
if [ ! -f "$m1" ]; then
  "$tmp/bin/plumb" mkmodel --preset llama-1b --type Q8_0 --pure "$m1.tmp" 2>&1 | tail -1
  mv "$m1.tmp" "$m1"
fi
if [ ! -f "$m8" ]; then
  "$tmp/bin/plumb" mkmodel --preset llama-1b --n-embd 4096 --n-head 32 --n-head-kv 8 --n-ff 14336 \
    --n-layer "$n8" --untied --type Q4_K --pure "$m8.tmp" 2>&1 | tail -1
  mv "$m8.tmp" "$m8"
fi
m8m=$tmp/models/llama-8b-width-q4_k_m-${n8}l.gguf
if [ ! -f "$m8m" ]; then
  "$tmp/bin/plumb" mkmodel --preset llama-1b --n-embd 4096 --n-head 32 --n-head-kv 8 --n-ff 14336 \
    --n-layer "$n8" --untied --type Q4_K_M "$m8m.tmp" 2>&1 | tail -1
  mv "$m8m.tmp" "$m8m"
fi
ls -la "$m1" "$m8" "$m8m"

# NODE_FLAGS: node's own options for the run (e.g. --cpu-prof --cpu-prof-dir=DIR: node refuses
# those in NODE_OPTIONS); BENCH_KERNELS: another copy of kernels/webgpu to run (an A/B of two
# commits' kernels in one call: `git archive REV kernels/webgpu` unpacked beside the bundle)
# shellcheck disable=SC2086
"$node" ${NODE_FLAGS:-} "${BENCH_KERNELS:-$here/kernels}/bench-node.mjs" "$m1" "$m8" "$m8m" --json "$out/bench.json" --md "$out/bench.md" "$@" 2>&1 | tee "$out/bench.log"

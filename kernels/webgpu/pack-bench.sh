#!/bin/sh
# pack-bench.sh — assembles .gpu-bench/ (git-ignored) at the repository root: everything the
# webgpu set's benchmark needs on a machine with a GPU and nothing installed (no node, no
# browser, no Vulkan loader), to be carried there and run with `sh .gpu-bench/run.sh`:
#   node.xz            Debian's /usr/bin/node, xz-compressed (it needs only glibc, libstdc++, libgcc_s)
#   lib/               libstdc++ and libgcc_s (used only where the machine lacks them), and the
#                      shared libraries of plumb (pcre2, utf8proc, jansson, hwloc, udev)
#   plumb.xz           the build's plumb CLI: run.sh makes the models there with `plumb mkmodel`
#                      (a llama-1b Q8_0 file is 1.3 GB of random, incompressible weights: made
#                      there in seconds, it never travels)
#   webgpu/            the npm `webgpu` package (Dawn's node binding): index.js, package.json,
#                      LICENSE.md, dist/linux-x64/dawn.node.xz
#   deb/               Debian's libvulkan1 (the Vulkan loader), unpacked by run.sh into a private
#                      folder (LD_LIBRARY_PATH) where the machine has no libvulkan.so.1
#   kernels/           kernels/webgpu/ (the WGSL kernels, the runtime, llama.mjs, the bench)
#   run.sh             kernels/webgpu/bench-run.sh
# Usage: kernels/webgpu/pack-bench.sh [BUILD_DIR]   (default build/; needs its tools/plumb)
# Needs here: node and npm (npm install webgpu, once: kept in .gpu-bench-cache/npm), xz, apt-get
# (download of libvulkan1 unless /var/cache/apt/archives has it). Fails (exit 1) if the folder
# would pass 60 MiB (the device's carry limit is 64 MiB).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
out=$root/.gpu-bench
cache=$root/.gpu-bench-cache # git-ignored too: the npm install and the xz files, kept between packs
plumb=$build/tools/plumb
[ -x "$plumb" ] || { echo "pack-bench: no $plumb (build plumb_cli first)"; exit 1; }
rm -rf "$out"
mkdir -p "$out/kernels" "$out/webgpu/dist/linux-x64" "$out/lib" "$out/deb" "$cache"

# node (xz once; it does not change between packs)
if [ ! -f "$cache/node.xz" ] || [ /usr/bin/node -nt "$cache/node.xz" ]; then
  xz -T2 -6 -c /usr/bin/node > "$cache/node.xz.tmp" && mv "$cache/node.xz.tmp" "$cache/node.xz"
fi
cp "$cache/node.xz" "$out/node.xz"
# the webgpu package
if [ ! -f "$cache/npm/node_modules/webgpu/dist/linux-x64/dawn.node" ]; then
  mkdir -p "$cache/npm"
  [ -f "$cache/npm/package.json" ] || echo '{"private":true}' > "$cache/npm/package.json"
  (cd "$cache/npm" && npm install --no-audit --no-fund --ignore-scripts webgpu >/dev/null)
fi
w=$cache/npm/node_modules/webgpu
cp "$w/index.js" "$w/package.json" "$w/LICENSE.md" "$out/webgpu/"
if [ ! -f "$cache/dawn.node.xz" ] || [ "$w/dist/linux-x64/dawn.node" -nt "$cache/dawn.node.xz" ]; then
  xz -T2 -6 -c "$w/dist/linux-x64/dawn.node" > "$cache/dawn.node.xz"
fi
cp "$cache/dawn.node.xz" "$out/webgpu/dist/linux-x64/dawn.node.xz"
# libraries
for l in libstdc++.so.6 libgcc_s.so.1; do cp -L "/lib/x86_64-linux-gnu/$l" "$out/lib/fallback-$l"; done
for l in $(ldd "$plumb" | awk '/=> \//{print $3}'); do
  case $(basename "$l") in libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|ld-linux*) ;; *) cp -L "$l" "$out/lib/";; esac
done
xz -T2 -6 -c "$plumb" > "$out/plumb.xz"
# the Vulkan loader
deb=$(ls /var/cache/apt/archives/libvulkan1_*_amd64.deb 2>/dev/null | head -1 || true)
if [ -z "$deb" ]; then
  (cd "$out/deb" && apt-get download libvulkan1:amd64 >/dev/null)
else
  cp "$deb" "$out/deb/"
fi
# the kernels and the bench
cp "$root"/kernels/webgpu/*.wgsl "$root"/kernels/webgpu/*.mjs "$out/kernels/"
cp "$root/kernels/webgpu/bench-run.sh" "$out/run.sh"
chmod +x "$out/run.sh"

size=$(du -sb "$out" | cut -f1)
echo "pack-bench: $out: $((size / 1048576)) MiB ($size bytes)"
[ "$size" -le $((60 * 1048576)) ] || { echo "pack-bench: over 60 MiB"; exit 1; }

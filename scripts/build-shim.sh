#!/usr/bin/env bash
# build-shim.sh [BUILD_DIR] - configure and build libpipetorch.so with CMake.
#
# libtorch is found via $TORCH_PREFIX, else Debian's libtorch-dev, else the
# cmake prefix of a PyTorch install (/usr/bin/python3, then python3).
# Prints the path of the built library on the last line of stdout.
# SHIM_JOBS sets the parallel compile jobs (default: every core).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$repo/trainer/torch"
build="${1:-$repo/build/torch}"
debian_prefix=/usr/lib/x86_64-linux-gnu/cmake/Torch

die() { echo "build-shim: $*" >&2; exit 1; }

command -v cmake >/dev/null || die "cmake not found (apt-get install cmake)"

torch_prefix() {
  if [[ -n "${TORCH_PREFIX:-}" ]]; then
    [[ -d "$TORCH_PREFIX" ]] || die "TORCH_PREFIX=$TORCH_PREFIX is not a directory"
    echo "$TORCH_PREFIX"; return
  fi
  local multi
  multi="$(gcc -print-multiarch 2>/dev/null || true)"
  for dir in "/usr/lib/${multi:-x86_64-linux-gnu}/cmake/Torch" "$debian_prefix"; do
    if [[ -f "$dir/TorchConfig.cmake" ]]; then echo "$dir"; return; fi
  done
  local py
  for py in /usr/bin/python3 python3; do
    command -v "$py" >/dev/null || continue
    if "$py" -c 'import torch.utils' 2>/dev/null >&2; then
      "$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)'
      return
    fi
  done
  die "libtorch not found: set TORCH_PREFIX, or apt-get install libtorch-dev, or install PyTorch"
}

prefix="$(torch_prefix)"
mkdir -p "$build"
# Reconfigure only when there is no cache or libtorch moved.
stamp="$build/.torch-prefix"
if [[ ! -f "$build/CMakeCache.txt" || "$(cat "$stamp" 2>/dev/null)" != "$prefix" ]]; then
  echo "build-shim: configuring with Torch from $prefix" >&2
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" >&2
  echo "$prefix" >"$stamp"
fi
cmake --build "$build" -j"${SHIM_JOBS:-$(nproc 2>/dev/null || echo 2)}" >&2
lib="$build/libpipetorch.so"
[[ -f "$lib" ]] || die "build finished but $lib is missing"
echo "$lib"

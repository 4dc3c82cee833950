#!/usr/bin/env bash
# Installs every Debian 12 package Tessera needs (non-interactive, idempotent).
# CUDA/NCCL are not installed here: they come with the GPU machines' image and
# are optional (CMake option TESSERA_CUDA=AUTO|ON|OFF).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang llvm-dev llvm-14-dev libclang-rt-14-dev  # llvm-14-dev: codegen/ (LLVM C API, ORC LLJIT, libLLVM-14.so)
  openmpi-bin libopenmpi-dev
  libucx-dev
  libhwloc-dev
  libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
  libopenblas-dev
  libcjson-dev
  zlib1g-dev
  libssl-dev
  jq
  python3 python3-numpy
  iproute2 util-linux iputils-ping
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"

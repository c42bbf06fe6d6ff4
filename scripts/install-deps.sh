#!/usr/bin/env bash
# Installs every Debian package that building, testing and running Weft needs.
# Idempotent: when everything is present it changes nothing and touches no network.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev
  libleveldb-dev libsnappy-dev libisal-dev libabsl-dev libxxhash-dev
  catch2 libfuse3-dev fuse3 libgoogle-perftools-dev
  clang python3
  etcd-server etcd-client
  procps iproute2 util-linux
  nftables  # tests only: a mount cut off the network (tests/harness/net_cut.h)
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"

# The etcd-server package may start a system etcd on 2379; Weft runs its own
# etcd with its own data dir and ports, so a system one is not needed.

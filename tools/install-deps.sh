#!/usr/bin/env bash
# Installs the Debian packages p2psim needs to build, test and plot.
# Idempotent: does nothing when every package is already present.
set -euo pipefail

packages=(
  build-essential cmake pkg-config make
  libsystemc-dev          # SystemC 2.3.4 with TLM-2.0
  libboost-graph-dev      # topology graph
  catch2                  # unit and model tests (v2)
  librapidcheck-dev       # property tests (the driver models against their reference)
  libfmt-dev              # text formatting
  libyaml-cpp-dev         # topology and scenario files
  libcli11-dev            # command line
  nlohmann-json3-dev      # JSON reports
  libpugixml-dev          # NCCL topology XML import
  gnuplot-nox             # plots
  python3                 # test helpers
  clang libclang-rt-14-dev  # make fuzz: libFuzzer and the sanitizers' runtime
  clang-format            # make format, make format-check (.ci/run)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

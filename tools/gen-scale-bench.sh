#!/usr/bin/env bash
# Writes the scale bench case for N GPUs: topologies/scale_<N>gpu.yaml and
# scenarios/bench/scale_<N>gpu.yaml (docs/benchmarks.md, "Scale: 4, 16 and 64 GPUs").
#   tools/gen-scale-bench.sh 4 16 64      # the committed cases
# N is a multiple of 4. The machine: two Skylake-SP sockets joined by UPI, N GPUs and N NICs
# (DMA engines), every PCIe switch holding two GPUs and two NICs; each socket's N/4 switches
# hang below at most two root ports, one level-1 switch on each root port and the rest one
# level down, below it. The load: every GPU writes to every other GPU (its copy engine into
# the peer's BAR1) and every NIC reads from the GPU beside it, all at once.
set -euo pipefail
cd "$(dirname "$0")/.."

# Bytes each GPU sends in all, spread evenly over its N-1 peers, and each NIC reads: with the
# same figure for every N, a case's bytes (2 x N x this) are in proportion to its GPUs, and
# so, nearly, are its TLP-hops (the share of paths through root complexes and UPI grows a
# little with N). 126000 KiB (123 MiB) makes the 16-GPU case take 1 to 3 minutes at TLP
# fidelity on a 2-core development machine. The 64-GPU case is made with a quarter of it
# (SCALE_GPU_KIB=31500: the same bytes in all as the 16-GPU case), as in proportion its TLP
# run took 16 minutes there. A multiple of 252 KiB (63 x 4 KiB) makes the per-peer streams of
# 4, 16 and 64 GPUs whole 4 KiB pages (1260 KiB, 315 x 4 KiB, for all three).
gpu_kib=${SCALE_GPU_KIB:-126000}
nic_kib=$gpu_kib

# A comment block: the text on standard input, wrapped.
comment() { tr '\n' ' ' | fold -s -w 95 | sed 's/ *$//; s/^/# /'; echo; }

# How the files say they were made: the size too, where it is not the default.
regen=""
[[ -n ${SCALE_GPU_KIB:-} ]] && regen="SCALE_GPU_KIB=$SCALE_GPU_KIB "

gen() {
  local n=$1
  if ((n < 4 || n % 4 != 0)); then
    echo "gen-scale-bench.sh: N must be a multiple of 4 (at least 4), got $n" >&2
    exit 2
  fi
  if ((gpu_kib % (4 * (n - 1)) != 0)); then
    echo "gen-scale-bench.sh: $gpu_kib KiB per GPU is no whole number of 4 KiB pages per peer for $n GPUs" >&2
    exit 2
  fi
  # Transfers that run together take memory regions one after another (64 KiB aligned) in
  # every target's BAR1 and every initiator's memory, so all of them must fit in BAR1 less
  # its reserved 32 MiB (the NICs get as much local memory as the GPUs' BAR1).
  local slots=$(((n * (n - 1) * ((gpu_kib / (n - 1) + 63) / 64) + n * ((nic_kib + 63) / 64)) * 64))
  if ((slots > 32 * 1024 * 1024 - 32 * 1024)); then
    echo "gen-scale-bench.sh: the streams of $n GPUs need $slots KiB of BAR1, more than 32 GiB less 32 MiB" >&2
    exit 2
  fi
  local per_socket=$((n / 4))              # switches per socket
  local ports=$((per_socket >= 2 ? 2 : 1)) # root ports per socket
  local per_port=$((per_socket / ports))   # switches per root port: one level 1, the rest level 2
  local switches=$((2 * per_socket))
  local stream_kib=$((gpu_kib / (n - 1)))
  local name=scale_${n}gpu
  local topo=topologies/$name.yaml scen=scenarios/bench/$name.yaml
  local levels="one level-1 switch on each root port and $((per_port - 1)) level-2 switch(es) below it"
  local pxb=", PXB (a level-1 switch and the one below it)" phb=", PHB (two root ports of a socket)"
  ((ports == 1)) && phb=""
  if ((per_port == 1)); then
    levels="one switch on each root port (too few GPUs for a second level at two per switch)"
    pxb=""
  elif ((per_port > 2)); then
    pxb=", PXB (a level-1 switch and one below it, or two below the same one)"
  fi

  {
    echo "# Made by ${regen}tools/gen-scale-bench.sh $n; edit that script, not this file."
    comment <<TEXT
The machine of the scale bench case $name (docs/benchmarks.md): a two-socket Skylake-SP
server joined by UPI with $n GPUs and $n NICs behind $switches PCIe switches, as servers with
cascaded PLX-style switches or PCIe expansion chassis are built. Each socket uses $ports x16
root port(s), with $levels. Every switch holds two GPUs and two NICs, a NIC beside each GPU
(PIX) as GPUDirect RDMA wants, so the GPUs per switch stay the same from 4 to 64 GPUs.
GPU-to-GPU paths are PIX (one switch)$pxb$phb and SYS (across UPI); skylake_sp routes P2P
on all of them.
TEXT
    cat <<YAML
name: $name
description: two Skylake-SP sockets, $n GPUs and $n NICs behind $switches PCIe switches
pcie: {mps: 256B, mrrs: 512B, rcb: 64B, tags: 256}
sockets:
  - {name: cpu0, platform: skylake_sp, memory: 64GiB}
  - {name: cpu1, platform: skylake_sp, memory: 64GiB}
interconnects:
  - {name: upi0, between: [cpu0, cpu1]}
switches:
YAML
    for ((k = 0; k < switches; k++)); do
      echo "  - {name: sw$k, latency: 110ns, forwarding: cut_through}"
    done
    echo "devices:"
    for ((g = 0; g < n; g++)); do
      echo "  - {name: gpu$g, type: gpu, bar1: 32GiB, bar1_reserved: 32MiB, vram: 32GiB}"
    done
    for ((g = 0; g < n; g++)); do
      echo "  - {name: nic$g, type: dma_engine, tags: 256, local_memory: 32GiB}"
    done
    echo "links:"
    local k=0 l1 s p j g d
    for ((s = 0; s < 2; s++)); do
      for ((p = 0; p < ports; p++)); do
        l1=$k
        for ((j = 0; j < per_port; j++, k++)); do
          if ((j == 0)); then
            echo "  - {up: cpu$s, down: sw$k, gen: 3, width: 16}   # level 1, socket $s"
          else
            echo "  - {up: sw$l1, down: sw$k, gen: 3, width: 16}    # level 2"
          fi
          for d in gpu nic; do
            for ((g = 2 * k; g < 2 * k + 2; g++)); do
              echo "  - {up: sw$k, down: $d$g, gen: 3, width: 16}"
            done
          done
        done
      done
    done
  } >"$topo"

  {
    echo "# Made by ${regen}tools/gen-scale-bench.sh $n; edit that script, not this file."
    comment <<TEXT
p2psim bench case: an all-to-all with network traffic on $n GPUs, as NCCL runs it: every GPU
writes to every other GPU (its copy engine into the peer's BAR1), $stream_kib KiB to each of
its $((n - 1)) peers ($gpu_kib KiB per GPU), and every NIC reads $nic_kib KiB from the GPU
beside it, all at the same time (the first transfer starts, every other one with_previous):
$((n * (n - 1))) + $n streams, $((2 * n * gpu_kib)) KiB in all.
Not verified, no latency probes.
TEXT
    cat <<YAML
name: $name
description: all-to-all of $n GPUs plus each NIC reading its GPU, all at once
topology: ../../topologies/$name.yaml
transfers:
YAML
    local start=""
    for ((g = 0; g < n; g++)); do
      for ((p = 0; p < n; p++)); do
        ((p == g)) && continue
        echo "  - {name: gpu$g-gpu$p, initiator: gpu$g, target: gpu$p, op: write, size: ${stream_kib}KiB$start}"
        start=", start: with_previous"
      done
    done
    for ((g = 0; g < n; g++)); do
      echo "  - {name: nic$g-gpu$g, initiator: nic$g, target: gpu$g, op: read, size: ${nic_kib}KiB$start}"
    done
    echo "measure: {bandwidth: true, latency: false}"
    echo "verify: false"
  } >"$scen"
  echo "wrote $topo and $scen"
}

if (($# == 0)); then
  echo "usage: tools/gen-scale-bench.sh N... (e.g. 4 16 64)" >&2
  exit 2
fi
for n in "$@"; do gen "$n"; done

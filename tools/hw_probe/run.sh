#!/usr/bin/env bash
# Records a machine with an NVIDIA GPU for p2psim's validation (tools/hw_probe/README.md):
#   run.sh OUTDIR
# writes OUTDIR/system.txt (date, kernel, nvidia-smi, nvcc), nvidia-smi-q.txt, topo-m.txt,
# pcie_config.txt (pcie_config.py), copy_curves.txt (copy_probe.cu), latency.txt (latency_probe.cu),
# sync_<policy>.txt (sync_probe.cu, one per host wait policy), engines.txt (engines_probe.cu),
# direction.txt (direction_probe.cu), streams.txt (streams_probe.cu) and nccl_topo.xml with
# nccl.log (nccl_topo_dump.py).
set -u
out=${1:?usage: run.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
{
  date -u '+%Y-%m-%dT%H:%M:%SZ'
  uname -srm
  nvidia-smi
  nvcc --version
  nvidia-smi --query-gpu=name,pci.bus_id,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,pcie.link.width.current --format=csv
} >"$out/system.txt" 2>&1
nvidia-smi -q >"$out/nvidia-smi-q.txt" 2>&1
nvidia-smi topo -m >"$out/topo-m.txt" 2>&1
python3 "$here/pcie_config.py" >"$out/pcie_config.txt" 2>&1
python3 "$here/nccl_topo_dump.py" "$out/nccl_topo.xml" >"$out/nccl.log" 2>&1
nvcc -O2 -std=c++17 -o /tmp/copy_probe "$here/copy_probe.cu" || exit 1
/tmp/copy_probe >"$out/copy_curves.txt" 2>&1 &
probe=$!
# The link while copying: at rest a GPU's link may train down to save power.
sleep 20
echo "# while copying:" >>"$out/system.txt"
nvidia-smi --query-gpu=pcie.link.gen.current,pcie.link.width.current --format=csv >>"$out/system.txt" 2>&1
wait $probe
nvcc -O2 -std=c++17 -o /tmp/latency_probe "$here/latency_probe.cu" || exit 1
/tmp/latency_probe >"$out/latency.txt" 2>&1
nvcc -O2 -std=c++17 -o /tmp/sync_probe "$here/sync_probe.cu" || exit 1
for policy in auto spin yield blocking; do
  /tmp/sync_probe $policy >"$out/sync_$policy.txt" 2>&1
done
nvcc -O2 -std=c++17 -o /tmp/engines_probe "$here/engines_probe.cu" || exit 1
/tmp/engines_probe >"$out/engines.txt" 2>&1
nvcc -O2 -std=c++17 -o /tmp/direction_probe "$here/direction_probe.cu" || exit 1
/tmp/direction_probe >"$out/direction.txt" 2>&1
nvcc -O2 -std=c++17 -o /tmp/streams_probe "$here/streams_probe.cu" || exit 1
/tmp/streams_probe >"$out/streams.txt" 2>&1

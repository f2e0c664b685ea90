"""Has NCCL write the machine's topology as it sees it (NCCL_TOPO_DUMP_FILE), the XML that
`p2psim topo --import-nccl` reads: one process, one rank, through PyTorch's NCCL.

Usage: python3 nccl_topo_dump.py OUT.xml
"""
import os
import sys

out = os.path.abspath(sys.argv[1])
os.environ["NCCL_TOPO_DUMP_FILE"] = out
os.environ.setdefault("NCCL_DEBUG", "INFO")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # never NVLink multicast on shared machines
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29511")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
x = torch.ones(1, device="cuda:0")
dist.all_reduce(x)  # the communicator, and with it the topology, exists by now
torch.cuda.synchronize()
print("NCCL version", torch.cuda.nccl.version(), "all_reduce", x.item())
dist.destroy_process_group()
print("wrote" if os.path.exists(out) else "NCCL wrote no file:", out)

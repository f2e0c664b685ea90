"""Has NCCL write the machine's topology as it sees it (NCCL_TOPO_DUMP_FILE), the XML that
`p2psim topo --import-nccl` reads: one rank per GPU through PyTorch's NCCL, rank 0 writing.

Usage: python3 nccl_topo_dump.py OUT.xml
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, world, out):
    os.environ["NCCL_TOPO_DUMP_FILE"] = out
    os.environ.setdefault("NCCL_DEBUG", "INFO")
    os.environ["NCCL_NVLS_ENABLE"] = "0"  # never NVLink multicast on shared machines
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    dev = torch.device(f"cuda:{rank}")
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    x = torch.ones(1, device=dev)
    dist.all_reduce(x)  # the communicator, and with it the topology, exists by now
    torch.cuda.synchronize(dev)
    if rank == 0:
        print("NCCL version", torch.cuda.nccl.version(), "ranks", world, "all_reduce", x.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    out = os.path.abspath(sys.argv[1])
    world = torch.cuda.device_count()
    mp.spawn(rank_main, args=(world, out), nprocs=world)
    print("wrote" if os.path.exists(out) else "NCCL wrote no file:", out)

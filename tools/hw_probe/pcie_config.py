"""Decodes the PCI Express capability of every NVIDIA device (and the bridge above it, where
the machine shows one) from its configuration space in sysfs: what p2psim's link and device
settings need (MPS, MRRS, tags, Relaxed Ordering, link speed and width). Reads as root the
full 4 KiB; as another user only the first 64 bytes, with no capability to decode.

Usage: python3 pcie_config.py   (prints a report)
PCI Express Base Specification, 7.5.3 (PCI Express Capability Structure).
"""
import glob
import os

SPEEDS = {1: "2.5 GT/s", 2: "5 GT/s", 3: "8 GT/s", 4: "16 GT/s", 5: "32 GT/s", 6: "64 GT/s"}


def u16(b, o):
    return b[o] | b[o + 1] << 8


def u32(b, o):
    return u16(b, o) | u16(b, o + 2) << 16


def pcie_cap(cfg):
    if len(cfg) < 64 or not (u16(cfg, 6) & 0x10):  # Status: Capabilities List
        return None
    at, seen = cfg[0x34] & 0xFC, set()
    while at and at not in seen and at + 2 <= len(cfg):
        seen.add(at)
        if cfg[at] == 0x10:
            return at
        at = cfg[at + 1] & 0xFC
    return None


def describe(path):
    cfg = open(os.path.join(path, "config"), "rb").read()
    name = os.path.basename(path)
    print(f"{name}: vendor 0x{u16(cfg, 0):04x} device 0x{u16(cfg, 2):04x}, "
          f"{len(cfg)} bytes of configuration space readable")
    at = pcie_cap(cfg)
    if at is None or at + 0x3C > len(cfg):
        print("  no PCI Express capability readable")
        return
    devcap, devctl = u32(cfg, at + 4), u16(cfg, at + 8)
    lnkcap, lnksta = u32(cfg, at + 0xC), u16(cfg, at + 0x12)
    devcap2, devctl2 = u32(cfg, at + 0x24), u16(cfg, at + 0x28)
    print(f"  DevCap: MPS supported {128 << (devcap & 7)} B, extended tags "
          f"{'yes' if devcap >> 5 & 1 else 'no'}")
    print(f"  DevCtl: MPS {128 << (devctl >> 5 & 7)} B, MRRS {128 << (devctl >> 12 & 7)} B, "
          f"Relaxed Ordering {'on' if devctl >> 4 & 1 else 'off'}, extended tags "
          f"{'on' if devctl >> 8 & 1 else 'off'}, No Snoop {'on' if devctl >> 11 & 1 else 'off'}")
    print(f"  LnkCap: {SPEEDS.get(lnkcap & 0xF, '?')} x{lnkcap >> 4 & 0x3F}")
    print(f"  LnkSta: {SPEEDS.get(lnksta & 0xF, '?')} x{lnksta >> 4 & 0x3F}")
    print(f"  DevCap2: 10-bit tag completer {'yes' if devcap2 >> 16 & 1 else 'no'}, requester "
          f"{'yes' if devcap2 >> 17 & 1 else 'no'}; DevCtl2: 10-bit tag requester "
          f"{'on' if devctl2 >> 12 & 1 else 'off'}, IDO request "
          f"{'on' if devctl2 >> 8 & 1 else 'off'}")


for dev in sorted(glob.glob("/sys/bus/pci/devices/*")):
    try:
        if open(os.path.join(dev, "vendor")).read().strip() != "0x10de":
            continue
    except OSError:
        continue
    describe(dev)
    parent = os.path.dirname(os.path.realpath(dev))
    if os.path.exists(os.path.join(parent, "config")):
        print("  the bridge above it:")
        describe(parent)

# The registered device kinds, in the order listings show them. Each is a folder of models/ that
# declares, in namespace p2psim::<kind>:
#   <kind>_kind.h:   const device::device_kind& kind();        (plain C++, library p2psim_<kind>_kind)
#   <kind>_device.h: const device::device_factory& factory();  (SystemC, library p2psim_<kind>)
# Adding a kind is adding its name here (docs/architecture.md, "Adding a device kind").
set(P2PSIM_DEVICE_KINDS gpu dma_engine nvme)

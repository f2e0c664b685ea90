// The probe's two IPC sides as two simulated processes, each in a thread of its own that runs
// only in its turn: the model sees one process at a time, as the driver sees two processes
// taking turns, and every line is printed in turn order, as the probe's parent prints them.
#include "tests/conformance/ipc_turns.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "models/driver/kernel/kernel.h"
#include "tools/cuda_probe/probe_ipc.h"

namespace p2psim::test {

namespace {

using sink = std::function<void(const std::string&)>;

struct turns {
  std::mutex m;
  std::condition_variable cv;
  int whose = 0;  // 0: the exporter's turn, 1: the importer's
  bool over[2] = {false, false};
};

class model_link : public cuda_probe::ipc::turn_link {
 public:
  model_link(turns& t, int side, kernel::pid_t pid, const sink& out, std::string who)
      : m_t(t), m_side(side), m_pid(pid), m_out(out), m_who(std::move(who)) {}
  void set_other(model_link* other) { m_other = other; }
  void line(const std::string& s) override { m_out(cuda_probe::ipc::prefixed(m_who, s)); }
  void send_data(const std::string& key, const void* p, size_t n) override {
    m_other->data[key] = std::string(static_cast<const char*>(p), n);
  }
  bool await() override {
    std::unique_lock lock(m_t.m);
    m_t.cv.wait(lock, [&] { return m_t.whose == m_side || m_t.over[1 - m_side]; });
    if (m_t.whose != m_side) return false;  // the other side ended without handing over
    kernel::current_os().switch_to(m_pid);
    return true;
  }
  bool handoff() override {
    give_turn(false);
    return await();
  }
  void done() override { give_turn(true); }
  void start() {  // the exporter's first turn
    kernel::current_os().switch_to(m_pid);
  }

 private:
  void give_turn(bool last) {
    std::lock_guard lock(m_t.m);
    m_t.whose = 1 - m_side;
    m_t.over[m_side] = last;
    m_t.cv.notify_all();
  }
  turns& m_t;
  int m_side;
  kernel::pid_t m_pid;
  const sink& m_out;
  std::string m_who;
  model_link* m_other = nullptr;
};

}  // namespace

// The importer is the parent (pid 100), as in the recording; the exporter its child.
void run_ipc_turns(const sink& out) {
  out("== IPC between two processes (fork before any CUDA call)");
  out("# the importer is the parent");
  kernel::os& os = kernel::current_os();
  const kernel::pid_t before = os.current_pid();
  turns t;
  model_link exporter(t, 0, 101, out, "exporter"), importer(t, 1, 100, out, "importer");
  exporter.set_other(&importer);
  importer.set_other(&exporter);
  std::thread child([&] {
    exporter.start();
    cuda_probe::ipc::run_exporter(exporter);
  });
  std::thread parent([&] { cuda_probe::ipc::run_importer(importer); });
  parent.join();
  child.join();
  os.switch_to(before);
  out("exporter: exited, status 0");
  out("== end");
}

}  // namespace p2psim::test

// `probe --ipc` on the machine: the exporter and the importer as two processes. The program
// forks before any CUDA call; the child exports, the parent imports (PROBE_IPC_EXPORTER_PARENT=1
// swaps them). They take turns over a socketpair: the child sends its lines to the parent,
// which prints them when the child's turn ends, so the transcript is in a fixed order whichever
// is the parent.
#include "probe_ipc.h"
#include "probe_named_memory.h"

namespace cuda_probe {

namespace {

// A socketpair end between the two processes: typed, framed messages. 'L' a line of the
// importer's, 'D' named bytes, 'G' your turn, 'E' end of my turn.
class channel {
 public:
  explicit channel(int fd) : m_fd(fd) {}
  bool send(char type, const std::string& payload) {
    char hdr[5];
    hdr[0] = type;
    const uint32_t n = (uint32_t)payload.size();
    std::memcpy(hdr + 1, &n, 4);
    return write_all(hdr, 5) && write_all(payload.data(), payload.size());
  }
  // 1: a message; 0: the other end closed; -1: timed out or failed.
  int recv(char& type, std::string& payload, int timeout_ms) {
    char hdr[5];
    int r = read_all(hdr, 5, timeout_ms);
    if (r != 1) return r;
    type = hdr[0];
    uint32_t n = 0;
    std::memcpy(&n, hdr + 1, 4);
    payload.assign(n, '\0');
    return n ? read_all(&payload[0], n, timeout_ms) : 1;
  }
  void send_data(const std::string& key, const void* p, size_t n) {
    send('D', key + std::string(1, '\0') + std::string(static_cast<const char*>(p), n));
  }
  static void store(const std::string& payload, std::map<std::string, std::string>& data) {
    const size_t z = payload.find('\0');
    if (z == std::string::npos) return;
    data[payload.substr(0, z)] = payload.substr(z + 1);
  }

 private:
  bool write_all(const char* p, size_t n) {
    while (n) {
      const ssize_t w = ::send(m_fd, p, n, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      p += w;
      n -= (size_t)w;
    }
    return true;
  }
  int read_all(char* p, size_t n, int timeout_ms) {
    while (n) {
      pollfd pf{m_fd, POLLIN, 0};
      const int pr = poll(&pf, 1, timeout_ms);
      if (pr < 0 && errno == EINTR) continue;
      if (pr <= 0) return -1;
      const ssize_t r = read(m_fd, p, n);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) return 0;
      if (r < 0) return -1;
      p += r;
      n -= (size_t)r;
    }
    return 1;
  }
  int m_fd;
};

constexpr int turn_timeout_ms = 30 * 1000;

// This process's end of the link between the two. The parent prints every line, its own at
// once and the child's (sent as 'L' messages) while it waits for the child's turn to end; so
// the transcript is in turn order whichever of the two is the parent. 'D' messages carry named
// bytes (handles, IDs, tokens, VAs), 'T' ends the sender's turn.
class socket_link : public ipc::turn_link {
 public:
  socket_link(int fd, bool parent, const sink& out, std::string who, pid_t other)
      : m_ch(fd), m_parent(parent), m_out(out), m_who(std::move(who)), m_other(other) {}
  // This side's lines.
  void line(const std::string& s) override {
    if (m_parent)
      m_out(ipc::prefixed(m_who, s));
    else
      m_ch.send('L', ipc::prefixed(m_who, s));
  }
  void send_data(const std::string& key, const void* p, size_t n) override {
    m_ch.send_data(key, p, n);
  }
  // Waits for the other side's turn to end; false if it went away.
  bool await() override {
    for (;;) {
      char t = 0;
      std::string p;
      const int r = m_ch.recv(t, p, turn_timeout_ms);
      if (r != 1) {
        if (m_parent) {
          m_out(r == 0 ? "(the other process closed the link)" : "(the other process timed out)");
          if (r != 0) kill(m_other, SIGKILL);
        }
        return false;
      }
      if (t == 'L' && m_parent) m_out(p);
      if (t == 'D') channel::store(p, data);
      if (t == 'T') return true;
    }
  }
  // Ends this side's turn and waits for the other's to end.
  bool handoff() override {
    m_ch.send('T', "");
    return await();
  }
  // Ends this side's last turn; the parent then prints whatever the child still sends.
  void done() override {
    m_ch.send('T', "");
    if (!m_parent) return;
    for (;;) {
      char t = 0;
      std::string p;
      if (m_ch.recv(t, p, turn_timeout_ms) != 1) return;
      if (t == 'L') m_out(p);
    }
  }

 private:
  channel m_ch;
  bool m_parent;
  const sink& m_out;
  std::string m_who;
  pid_t m_other;
};

}  // namespace

// Forks before any CUDA call. The child exports and the parent imports (the importer reaches
// into the exporter's memory, and an ancestor may always reach into a descendant);
// PROBE_IPC_EXPORTER_PARENT=1 swaps them. The transcript is the same either way.
void run_ipc(const sink& out) {
  const char* env = std::getenv("PROBE_IPC_EXPORTER_PARENT");
  const bool exporter_parent = env && std::strcmp(env, "1") == 0;
  out("== IPC between two processes (fork before any CUDA call)");
  out(fmt("# the %s is the parent", exporter_parent ? "exporter" : "importer"));
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    out("socketpair failed");
    return;
  }
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) {
    out("fork failed");
    return;
  }
  const bool parent = pid != 0;
  const bool exporter = parent == exporter_parent;
  close(sv[parent ? 1 : 0]);
  if (!parent) prctl(PR_SET_PDEATHSIG, SIGKILL);
  {
    socket_link l(sv[parent ? 0 : 1], parent, out, exporter ? "exporter" : "importer", pid);
    if (exporter) {
      ipc::run_exporter(l);
    } else {
      ipc::run_importer(l);
    }
  }
  close(sv[parent ? 0 : 1]);
  if (!parent) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  const char* child = exporter_parent ? "importer" : "exporter";
  if (WIFEXITED(status))
    out(fmt("%s: exited, status %d", child, WEXITSTATUS(status)));
  else if (WIFSIGNALED(status))
    out(fmt("%s: killed by signal %d", child, WTERMSIG(status)));
  out("== end");
}

}  // namespace cuda_probe

#include "sim/litmus/condition.h"

#include <cctype>
#include <stdexcept>

namespace p2psim::litmus {

std::string value::str() const {
  switch (kind) {
    case number:
      return std::to_string(n);
    case torn:
      return "torn";
    case ramp:
      return "ramp";
    case unset:
      break;
  }
  return "unset";
}

struct condition::node {
  enum op_t { eq, ne, and_, or_ } op = eq;
  std::string name;  // eq / ne
  value rhs;
  std::shared_ptr<const node> left, right;  // and_ / or_
};

namespace {

using node_ptr = std::shared_ptr<const condition::node>;

// Recursive descent: or := and ('||' and)*; and := atom ('&&' atom)*;
// atom := '(' or ')' | NAME ('=='|'!=') VALUE.
class parser {
 public:
  parser(const std::string& s, std::vector<std::string>& names) : m_s(s), m_names(names) {}

  node_ptr parse() {
    node_ptr n = disjunction();
    skip();
    if (m_i != m_s.size()) fail("unexpected '" + m_s.substr(m_i) + "'");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("column " + std::to_string(m_i + 1) + ": " + what);
  }
  void skip() {
    while (m_i < m_s.size() && std::isspace(static_cast<unsigned char>(m_s[m_i]))) ++m_i;
  }
  bool eat(const char* tok) {
    skip();
    std::string t(tok);
    if (m_s.compare(m_i, t.size(), t) != 0) return false;
    m_i += t.size();
    return true;
  }
  std::string word() {
    skip();
    size_t b = m_i;
    while (m_i < m_s.size() && (std::isalnum(static_cast<unsigned char>(m_s[m_i])) ||
                                m_s[m_i] == '_' || m_s[m_i] == '.'))
      ++m_i;
    return m_s.substr(b, m_i - b);
  }
  node_ptr combine(condition::node::op_t op, node_ptr l, node_ptr r) {
    auto n = std::make_shared<condition::node>();
    n->op = op;
    n->left = std::move(l);
    n->right = std::move(r);
    return n;
  }
  node_ptr disjunction() {
    node_ptr n = conjunction();
    while (eat("||")) n = combine(condition::node::or_, n, conjunction());
    return n;
  }
  node_ptr conjunction() {
    node_ptr n = atom();
    while (eat("&&")) n = combine(condition::node::and_, n, atom());
    return n;
  }
  node_ptr atom() {
    if (eat("(")) {
      node_ptr n = disjunction();
      if (!eat(")")) fail("expected ')'");
      return n;
    }
    auto n = std::make_shared<condition::node>();
    n->name = word();
    if (n->name.empty() || std::isdigit(static_cast<unsigned char>(n->name[0])))
      fail("expected a register or location name");
    if (eat("=="))
      n->op = condition::node::eq;
    else if (eat("!="))
      n->op = condition::node::ne;
    else
      fail("expected == or != after '" + n->name + "'");
    std::string v = word();
    if (v == "torn")
      n->rhs = {value::torn, 0};
    else if (v == "ramp")
      n->rhs = {value::ramp, 0};
    else if (v == "unset")
      n->rhs = {value::unset, 0};
    else {
      size_t used = 0;
      try {
        n->rhs = value::of(std::stoull(v, &used, 0));
      } catch (const std::exception&) {
        used = 0;
      }
      if (v.empty() || used != v.size()) fail("expected a number, torn, ramp or unset");
    }
    bool seen = false;
    for (const auto& k : m_names) seen |= k == n->name;
    if (!seen) m_names.push_back(n->name);
    return n;
  }

  const std::string& m_s;
  std::vector<std::string>& m_names;
  size_t m_i = 0;
};

bool eval(const condition::node& n, const std::function<value(const std::string&)>& lookup) {
  switch (n.op) {
    case condition::node::eq:
      return lookup(n.name) == n.rhs;
    case condition::node::ne:
      return !(lookup(n.name) == n.rhs);
    case condition::node::and_:
      return eval(*n.left, lookup) && eval(*n.right, lookup);
    case condition::node::or_:
      return eval(*n.left, lookup) || eval(*n.right, lookup);
  }
  return false;
}

}  // namespace

condition condition::parse(const std::string& text) {
  condition c;
  c.m_text = text;
  c.m_root = parser(text, c.m_names).parse();
  return c;
}

bool condition::holds(const std::function<value(const std::string&)>& lookup) const {
  return m_root && eval(*m_root, lookup);
}

}  // namespace p2psim::litmus

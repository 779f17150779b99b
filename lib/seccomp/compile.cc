// SPDX-License-Identifier: Apache-2.0
// The compiler: the resolved [seccomp] table turned into one libseccomp filter for
// x86_64 (i386 and x32 killed as bad architectures), exported as classic BPF, and the
// same table evaluated in userspace by decide().
#include "seccomp/internal.hpp"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

namespace agentjail::seccomp {

std::uint32_t bpf_action(const Action& a) {
    switch (a.kind) {
        case ActionKind::allow: return SECCOMP_RET_ALLOW;
        case ActionKind::kill: return SECCOMP_RET_KILL_PROCESS;
        // Refusals go through the supervisor so that every one is recorded and
        // answered with the errno decide() picks; log and notify likewise.
        case ActionKind::errno_ret:
            if (a.quiet) return SECCOMP_RET_ERRNO | (static_cast<std::uint32_t>(a.err) & SECCOMP_RET_DATA);
            return SECCOMP_RET_USER_NOTIF;
        case ActionKind::log:
        case ActionKind::notify: return SECCOMP_RET_USER_NOTIF;
    }
    return SECCOMP_RET_KILL_PROCESS;
}

namespace detail {

// The "sharp" product: used to compile "allow ioctl, except arg1 & 0xffffffff ==
// TIOCSTI" when the allow is not the default (libseccomp has no per-syscall else
// branch), and a != on a narrow argument.
std::vector<Cube> complement(const std::vector<Cube>& cut, size_t limit) {
    std::vector<Cube> out{{0, 0}};
    for (const auto& b : cut) {
        std::vector<Cube> next;
        for (const auto& a : out) {
            if (((a.v ^ b.v) & a.m & b.m) != 0) {  // disjoint: untouched
                next.push_back(a);
                continue;
            }
            std::uint64_t free = b.m & ~a.m;  // bits b fixes and a does not
            std::uint64_t fixed_m = a.m, fixed_v = a.v;
            for (int i = 0; i < 64; ++i) {
                std::uint64_t bit = std::uint64_t{1} << i;
                if (!(free & bit)) continue;
                next.push_back({fixed_m | bit, fixed_v | (~b.v & bit)});
                fixed_m |= bit;
                fixed_v |= (b.v & bit);
            }
        }
        out = std::move(next);
        if (out.size() > limit) break;
    }
    return out;
}

std::vector<Cube> narrowed_cubes(const Cmp& c) {
    if (c.bits >= 64) return {};
    const std::uint64_t w = width_mask(c.bits);
    // [lo, hi] within the width as aligned power-of-two blocks: each is the values
    // whose bits above the block's size equal lo's.
    auto blocks = [w](std::uint64_t lo, std::uint64_t hi) {
        std::vector<Cube> out;
        while (lo <= hi) {
            std::uint64_t size = 1;
            while ((lo & (size * 2 - 1)) == 0 && size * 2 <= w && lo + size * 2 - 1 <= hi)
                size *= 2;
            out.push_back({w & ~(size - 1), lo});
            if (lo + size - 1 >= hi) break;
            lo += size;
        }
        return out;
    };
    switch (c.op) {
        case CmpOp::eq: return {{w, c.a}};
        case CmpOp::masked_eq: return {{c.a & w, c.b}};
        case CmpOp::ne: return complement({{w, c.a}}, 64);
        case CmpOp::lt: return c.a == 0 ? std::vector<Cube>{} : blocks(0, c.a - 1);
        case CmpOp::le: return blocks(0, c.a);
        case CmpOp::gt: return c.a >= w ? std::vector<Cube>{} : blocks(c.a + 1, w);
        case CmpOp::ge: return blocks(c.a, w);
    }
    return {};
}

}  // namespace detail

namespace {

using detail::Cmp;
using detail::CmpOp;
using detail::Cube;
using detail::Entry;

constexpr std::uint64_t all_ones = ~std::uint64_t{0};
// x32 calls carry this bit in the syscall number on the x86_64 arch.
constexpr std::uint32_t x32_syscall_bit = 0x40000000;
// Cubes an exception may cost (see complement()): bounded so a policy cannot make the
// filter exceed the kernel's 4096 instructions by accident.
constexpr size_t max_exception_cubes = 256;

scmp_compare to_scmp(CmpOp op) {
    switch (op) {
        case CmpOp::eq: return SCMP_CMP_EQ;
        case CmpOp::ne: return SCMP_CMP_NE;
        case CmpOp::lt: return SCMP_CMP_LT;
        case CmpOp::le: return SCMP_CMP_LE;
        case CmpOp::gt: return SCMP_CMP_GT;
        case CmpOp::ge: return SCMP_CMP_GE;
        case CmpOp::masked_eq: return SCMP_CMP_MASKED_EQ;
    }
    return SCMP_CMP_EQ;
}

struct CtxDeleter {
    void operator()(void* c) const { seccomp_release(c); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

Error lib_error(const std::string& what, int rc) {
    return Error{ErrorKind::internal, -rc, "libseccomp: " + what + ": " + std::strerror(-rc)};
}

class CompiledProgram final : public Program {
public:
    explicit CompiledProgram(detail::Resolved r) : r_(std::move(r)) {
        int max_nr = r_.table.empty() ? 0 : r_.table.back().nr;
        index_.assign(static_cast<size_t>(max_nr) + 1, -1);
        for (size_t i = 0; i < r_.table.size(); ++i) index_[static_cast<size_t>(r_.table[i].nr)] = static_cast<int>(i);
        for (const auto& rr : r_.rules) infos_.push_back(rr.info);
    }

    Result<void> build();

    const std::vector<sock_filter>& bpf() const override { return bpf_; }
    const std::vector<RuleInfo>& rules() const override { return infos_; }
    Action default_action() const override { return r_.default_action; }
    bool needs_listener() const override { return listener_; }
    bool prebuilt() const override { return prebuilt_; }

    Decision decide(std::uint32_t arch, int nr, const std::uint64_t args[6]) const override {
        const auto unr = static_cast<std::uint32_t>(nr);
        // The filter's first tests: a foreign arch, or an x32 number (-1 passes: the
        // kernel answers ENOSYS for it, as the BPF lets it through to the default).
        if (arch != AUDIT_ARCH_X86_64 || (unr >= x32_syscall_bit && unr != 0xffffffffu))
            return Decision{Action{ActionKind::kill, 0}, -1};
        if (nr < 0 || static_cast<size_t>(nr) >= index_.size() || index_[static_cast<size_t>(nr)] < 0)
            return Decision{r_.default_action, -1};
        const auto& t = r_.table[static_cast<size_t>(index_[static_cast<size_t>(nr)])];
        // Conditional entries are the exceptions to an unconditional one (which can only
        // come first in the table, having replaced everything before it).
        const Entry* hit = nullptr;
        for (const auto& e : t.entries) {
            if (e.cmps.empty()) continue;
            if (std::all_of(e.cmps.begin(), e.cmps.end(), [&](const Cmp& c) { return detail::matches(c, args); })) {
                hit = &e;
                break;
            }
        }
        if (hit == nullptr)
            for (const auto& e : t.entries)
                if (e.cmps.empty()) hit = &e;
        if (hit == nullptr) return Decision{r_.default_action, -1};
        return Decision{decided(*hit, args), hit->rule};
    }

    std::string to_text() const override;

    const detail::Resolved& resolved() const { return r_; }

private:
    // A notify rule's answer comes from its built-in decider.
    static Action decided(const Entry& e, const std::uint64_t args[6]) {
        if (e.action.kind != ActionKind::notify) return e.action;
        switch (e.decider) {
            case detail::Decider::personality:
                // personality(0xffffffff) only reads the current persona; the kernel takes
                // an unsigned int, so only the low 32 bits count.
                if ((args[0] & 0xffffffffu) == 0xffffffffu) return Action{ActionKind::allow, 0};
                return Action{ActionKind::errno_ret, EPERM};
            case detail::Decider::unix_socket:
                // The socket gate: a Unix datagram socket would name its destinations
                // in each send. The type's low bits (SOCK_CLOEXEC and SOCK_NONBLOCK are
                // above): SOCK_DGRAM, and SOCK_RAW, which AF_UNIX makes a datagram one.
                if ((args[1] & 0xe) == 2) return Action{ActionKind::errno_ret, EACCES};
                return Action{ActionKind::allow, 0};
            case detail::Decider::serialize:
            case detail::Decider::connect:
                // The supervisor makes the call itself (launch/socket_gate.hpp).
                return Action{ActionKind::notify, 0};
            case detail::Decider::none: break;
        }
        return Action{ActionKind::errno_ret, EPERM};
    }

    Result<void> add(scmp_filter_ctx ctx, const Entry& e, int nr, const std::vector<Cmp>& cmps,
                     std::uint32_t act);

    detail::Resolved r_;
    std::vector<int> index_;
    std::vector<RuleInfo> infos_;
    std::vector<sock_filter> bpf_;
    bool listener_ = false;
    bool prebuilt_ = false;
};

// One entry as libseccomp rules. libseccomp compares whole 64-bit registers, but
// the kernel reads an int parameter's low 32 bits only: socket(AF_NETLINK, SOCK_RAW,
// NETLINK_AUDIT | 1 << 32) is an audit socket to the kernel and no match for
// "arg2 == NETLINK_AUDIT" to a plain comparison. So every comparison on a narrow
// argument becomes masked comparisons that leave the upper bits out (one rule per
// combination of its cubes), for every rule at once.
Result<void> CompiledProgram::add(scmp_filter_ctx ctx, const Entry& e, int nr,
                                  const std::vector<Cmp>& cmps, std::uint32_t act) {
    std::vector<std::vector<scmp_arg_cmp>> alternatives{{}};
    for (const auto& x : cmps) {
        std::vector<scmp_arg_cmp> options;
        if (x.bits >= 64) {
            options.push_back(scmp_arg_cmp{x.arg, to_scmp(x.op), x.a, x.b});
        } else {
            for (const auto& cube : detail::narrowed_cubes(x))
                options.push_back(scmp_arg_cmp{x.arg, SCMP_CMP_MASKED_EQ, cube.m, cube.v});
        }
        std::vector<std::vector<scmp_arg_cmp>> next;
        for (const auto& alt : alternatives)
            for (const auto& o : options) {
                auto y = alt;
                y.push_back(o);
                next.push_back(std::move(y));
            }
        alternatives = std::move(next);
    }
    for (auto& c : alternatives) {
        int rc =
            seccomp_rule_add_exact_array(ctx, act, nr, static_cast<unsigned>(c.size()), c.data());
        if (rc != 0)
            return lib_error("adding the rule at " +
                                 r_.rules[static_cast<size_t>(e.rule)].info.where +
                                 " for syscall " + std::to_string(nr),
                             rc);
    }
    if (act == SECCOMP_RET_USER_NOTIF && !alternatives.empty()) listener_ = true;
    return {};
}

Result<void> CompiledProgram::build() {
    // A built-in policy's table was compiled when agentjail was built: take that
    // program (from the binary itself) instead of building the same one again.
    if (detail::prebuilt_enabled()) {
        const auto found = detail::prebuilt_filters();
        if (!found.empty()) {
            const std::string key = detail::filter_key(r_);
            for (const auto& p : found) {
                if (p.key != key) continue;
                bpf_.assign(p.bpf, p.bpf + p.len);
                listener_ = p.listener;
                prebuilt_ = true;
                return {};
            }
        }
    }
    const std::uint32_t def = bpf_action(r_.default_action);
    Ctx ctx(seccomp_init(def));
    if (!ctx) return Error{ErrorKind::internal, 0, "libseccomp: cannot create a filter"};
    listener_ = def == SECCOMP_RET_USER_NOTIF;
    // i386 (int 0x80) and x32 numbers mean other syscall tables: an x86_64 filter
    // that also let them through would be bypassed by them (SYS-02). Only the native
    // arch is in the filter, so both reach the bad-arch action.
    int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc == 0) rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (rc != 0) return lib_error("setting filter attributes", rc);

    for (const auto& t : r_.table) {
        const Entry* uncond = nullptr;
        for (const auto& e : t.entries)
            if (e.cmps.empty()) uncond = &e;
        // Entries that compile to the default action need no BPF: the fall-through
        // gives it. decide() still names them.
        if (uncond == nullptr || bpf_action(uncond->action) == def) {
            for (const auto& e : t.entries) {
                std::uint32_t act = bpf_action(e.action);
                if (act == def || e.cmps.empty()) continue;
                if (auto ok = add(ctx.get(), e, t.nr, e.cmps, act); !ok) return ok;
            }
            continue;
        }
        // An unconditional action other than the default, with exceptions of another
        // BPF action: the exceptions as rules, the unconditional action over the rest.
        const std::uint32_t u = bpf_action(uncond->action);
        std::vector<const Entry*> exceptions;
        for (const auto& e : t.entries)
            if (!e.cmps.empty() && bpf_action(e.action) != u) exceptions.push_back(&e);
        if (exceptions.empty()) {
            if (auto ok = add(ctx.get(), *uncond, t.nr, {}, u); !ok) return ok;
            continue;
        }
        std::vector<Cube> cut;
        const unsigned arg = exceptions.front()->cmps.front().arg;
        for (const Entry* e : exceptions) {
            const auto& rr = r_.rules[static_cast<size_t>(e->rule)].info;
            const auto& c = e->cmps.front();
            if (e->cmps.size() != 1 || c.arg != arg || (c.op != CmpOp::eq && c.op != CmpOp::masked_eq))
                return Error{ErrorKind::invalid_input, 0,
                             rr.where + ": seccomp: " + t.name + ": an exception to the rule at " +
                                 r_.rules[static_cast<size_t>(uncond->rule)].info.where +
                                 " must compare one argument with == or '& MASK ==' (the same "
                                 "argument in every exception)"};
            if (c.bits < 64)
                for (const auto& cube : detail::narrowed_cubes(c)) cut.push_back(cube);
            else
                cut.push_back(c.op == CmpOp::eq ? Cube{all_ones, c.a} : Cube{c.a, c.b});
        }
        auto rest = detail::complement(cut, max_exception_cubes);
        if (rest.size() > max_exception_cubes)
            return Error{ErrorKind::invalid_input, 0,
                         r_.rules[static_cast<size_t>(exceptions.front()->rule)].info.where +
                             ": seccomp: " + t.name + ": the exceptions are too complex to compile"};
        for (const Entry* e : exceptions)
            if (bpf_action(e->action) != def)
                if (auto ok = add(ctx.get(), *e, t.nr, e->cmps, bpf_action(e->action)); !ok) return ok;
        for (const auto& cube : rest) {
            std::vector<Cmp> cmps;
            if (cube.m != 0) cmps.push_back(Cmp{arg, CmpOp::masked_eq, cube.m, cube.v});
            if (auto ok = add(ctx.get(), *uncond, t.nr, cmps, u); !ok) return ok;
        }
    }

    // seccomp_export_bpf_mem arrived in libseccomp 2.6; a memfd works with 2.5 too.
    int fd = ::memfd_create("agentjail-seccomp", MFD_CLOEXEC);
    if (fd < 0) return Error{ErrorKind::internal, errno, std::string("memfd_create: ") + std::strerror(errno)};
    rc = seccomp_export_bpf(ctx.get(), fd);
    if (rc != 0) {
        ::close(fd);
        return lib_error("exporting the filter", rc);
    }
    off_t size = ::lseek(fd, 0, SEEK_END);
    if (size < 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) {
        ::close(fd);
        return Error{ErrorKind::internal, 0, "libseccomp: exported a malformed filter"};
    }
    bpf_.resize(static_cast<size_t>(size) / sizeof(sock_filter));
    ssize_t got = ::pread(fd, bpf_.data(), static_cast<size_t>(size), 0);
    ::close(fd);
    if (got != size) return Error{ErrorKind::internal, 0, "libseccomp: short read of the exported filter"};
    return {};
}

std::string join(const std::vector<std::string>& v, const char* sep = " ") {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
}

std::string CompiledProgram::to_text() const {
    std::string out;
    out += "  arch       x86_64 only; i386 (int 0x80) and x32 calls: kill the process\n";
    out += "  args       compared on the bits the kernel reads of each parameter (an int's "
           "low 32, as the kernel ignores the rest)\n";
    out += "  default    " + detail::action_text(r_.default_action) + "  (" + r_.default_where + ")\n";
    out += std::string("  nested     ") +
           (r_.nested ? "allowed (nested_sandboxes = true: namespace and mount rules left out)"
                      : "refused (nested_sandboxes = false)") +
           "\n";
    std::string forced;
    for (auto n : detail::forced_allow()) forced += (forced.empty() ? "" : " ") + std::string(n);
    out += "  always     " + forced +
           " (the launcher calls them after loading the filter, before execve)\n";
    out += "  filter     " + std::to_string(bpf_.size()) + " BPF instructions" +
           (prebuilt_ ? " (compiled when agentjail was built)" : "") + "; " +
           (listener_ ? "refused calls go to the supervisor, which records them and answers "
                        "with the rule's errno"
                      : "no supervisor needed") +
           "\n";
    out += "  rules (base first; a later unconditional rule replaces earlier ones):\n";
    for (const auto& rr : r_.rules) {
        out += "    " + rr.info.where + "  " + rr.info.text + "\n";
        bool group = rr.info.text.find('@') != std::string::npos;
        if (group) out += "        = " + join(rr.members) + "\n";
        if (!rr.not_native.empty()) out += "        (not on x86_64: " + join(rr.not_native) + ")\n";
        // "replaced: open_tree move_mount ... by default.toml:89:1", one line per rule.
        std::vector<std::string> by;
        for (const auto& [call, where] : rr.replaced)
            if (std::find(by.begin(), by.end(), where) == by.end()) by.push_back(where);
        for (const auto& w : by) {
            std::vector<std::string> calls;
            for (const auto& [call, where] : rr.replaced)
                if (where == w) calls.push_back(call);
            out += "        replaced: " + join(calls) + " by " + w + "\n";
        }
        if (!rr.info.why.empty()) out += "        why: " + rr.info.why + "\n";
    }
    if (!r_.left_out.empty()) {
        out += "  left out (nested_sandboxes = true):\n";
        for (const auto& l : r_.left_out) out += "    " + l + "\n";
    }
    return out;
}

}  // namespace

namespace {

// The section resolved for the native architecture, adjusted, then built: what
// compile() and compile_without_listener() share.
Result<std::shared_ptr<const Program>> compile_adjusted(const policy::Seccomp& spec,
                                                        void (*adjust)(detail::Resolved&)) {
    if (!spec.present) return std::shared_ptr<const Program>();
    if (seccomp_arch_native() != SCMP_ARCH_X86_64)
        return Error{ErrorKind::unsupported, 0,
                     "seccomp: the [seccomp] section is compiled for x86_64 only"};
    auto resolved = detail::resolve(spec);
    if (!resolved) return std::move(resolved).error();
    if (adjust != nullptr) adjust(*resolved);
    auto program = std::make_shared<CompiledProgram>(std::move(*resolved));
    if (auto ok = program->build(); !ok) return std::move(ok).error();
    return std::shared_ptr<const Program>(std::move(program));
}

}  // namespace

Result<std::shared_ptr<const Program>> compile(const policy::Seccomp& spec) {
    return compile_adjusted(spec, nullptr);
}

namespace {

// An action the kernel answers alone.
Action without_supervisor(const Action& a) {
    switch (a.kind) {
        case ActionKind::allow:
        case ActionKind::kill: return a;
        case ActionKind::errno_ret: return Action{ActionKind::errno_ret, a.err, true};
        case ActionKind::log: return Action{ActionKind::allow, 0};
        case ActionKind::notify: break;
    }
    return Action{ActionKind::errno_ret, EPERM, true};
}

// compile_without_listener's change to the resolved table: every action one the
// kernel answers alone.
void answer_alone(detail::Resolved& r) {
    r.default_action = without_supervisor(r.default_action);
    const Action refuse_unix{ActionKind::errno_ret, EACCES, true};
    // The gate's connect rule (every filter has one) names the refusal of Unix sockets.
    int gate_rule = -1;
    for (const auto& t : r.table)
        for (const auto& e : t.entries)
            if (e.decider == detail::Decider::connect) gate_rule = e.rule;
    auto bits = [](std::string_view name, unsigned arg) {
        const auto w = detail::arg_widths(name);
        return w ? w->bits[arg] : 32u;
    };
    for (auto& t : r.table) {
        std::vector<Entry> entries;
        for (const auto& e : t.entries) {
            Entry x = e;
            x.decider = detail::Decider::none;
            if (e.action.kind != ActionKind::notify) {
                x.action = without_supervisor(e.action);
                entries.push_back(std::move(x));
                continue;
            }
            switch (e.decider) {
                case detail::Decider::connect:
                case detail::Decider::serialize:
                    // No Unix socket can be made that is not connected already, and
                    // the rest are inside the sandbox's network: nothing to decide.
                    x.action = Action{ActionKind::allow, 0};
                    break;
                case detail::Decider::unix_socket: {
                    // socketpair: stream and seqpacket pairs, connected from the start,
                    // are allowed; the rest (a datagram one could still send to any
                    // path) takes what the table says otherwise. (socket: below.)
                    for (const std::uint64_t type : {0u /* SOCK_STREAM */, 4u /* SOCK_SEQPACKET */}) {
                        Entry pair = x;
                        pair.cmps.push_back(Cmp{1, CmpOp::masked_eq, 0xe, type, bits(t.name, 1)});
                        pair.action = Action{ActionKind::allow, 0};
                        entries.push_back(std::move(pair));
                    }
                    continue;
                }
                case detail::Decider::personality:
                    // The filter cannot tell the query, personality(0xffffffff), from a
                    // change within the rule's own condition: both are refused.
                    x.action = Action{ActionKind::errno_ret, EPERM, true};
                    break;
                case detail::Decider::none: x.action = Action{ActionKind::errno_ret, EPERM, true}; break;
            }
            entries.push_back(std::move(x));
        }
        if (t.name == "socket") {
            // No Unix socket at all: one made unconnected could connect to any path.
            std::vector<Entry> kept;
            for (auto& e : entries) {
                const bool unix_entry = std::any_of(e.cmps.begin(), e.cmps.end(), [](const Cmp& c) {
                    return c.arg == 0 && c.op == CmpOp::eq && c.a == 1;
                });
                if (!unix_entry) kept.push_back(std::move(e));
            }
            kept.insert(kept.begin(), Entry{gate_rule, {Cmp{0, CmpOp::eq, 1 /* AF_UNIX */, 0, bits(t.name, 0)}},
                                            refuse_unix, detail::Decider::none});
            entries = std::move(kept);
        }
        t.entries = std::move(entries);
    }
}

}  // namespace

Result<std::shared_ptr<const Program>> compile_without_listener(const policy::Seccomp& spec) {
    auto program = compile_adjusted(spec, answer_alone);
    if (program && *program && (*program)->needs_listener())
        return Error{ErrorKind::internal, 0, "seccomp: the filter without a listener still needs one"};
    return program;
}

std::string to_json(const Program& program) {
    using json = nlohmann::ordered_json;
    const auto* compiled = dynamic_cast<const CompiledProgram*>(&program);
    json j;
    j["arch"] = "x86_64";
    j["bad_arch_action"] = "kill";  // i386 and x32
    j["default"] = detail::action_text(program.default_action());
    j["bpf_instructions"] = program.bpf().size();
    j["needs_listener"] = program.needs_listener();
    j["prebuilt"] = program.prebuilt();
    json forced = json::array();
    for (auto n : detail::forced_allow()) forced.push_back(std::string(n));
    j["always_allowed"] = forced;
    json rules = json::array();
    for (const auto& r : program.rules())
        rules.push_back({{"where", r.where}, {"text", r.text}, {"why", r.why},
                         {"action", detail::action_text(r.action)}});
    if (compiled != nullptr) {
        const auto& res = compiled->resolved();
        j["default_where"] = res.default_where;
        j["nested_sandboxes"] = res.nested;
        for (size_t i = 0; i < res.rules.size() && i < rules.size(); ++i) {
            rules[i]["syscalls"] = res.rules[i].members;
            json replaced = json::array();
            for (const auto& [call, where] : res.rules[i].replaced)
                replaced.push_back({{"syscall", call}, {"by", where}});
            rules[i]["replaced"] = std::move(replaced);
        }
        j["rules"] = std::move(rules);
        j["left_out"] = res.left_out;
        // Per native call: the unconditional action, or that it depends on arguments
        // and what applies otherwise. Calls not listed get the default.
        json calls = json::object();
        for (const auto& t : res.table) {
            json c;
            c["nr"] = t.nr;
            const Entry* uncond = nullptr;
            bool conditional = false;
            for (const auto& e : t.entries) {
                if (e.cmps.empty())
                    uncond = &e;
                else
                    conditional = true;
            }
            Action otherwise = uncond ? uncond->action : program.default_action();
            if (conditional) {
                c["conditional"] = true;
                c["otherwise"] = detail::action_text(otherwise);
            } else {
                c["action"] = detail::action_text(otherwise);
            }
            // record = false rules: refused by the kernel itself, never logged.
            if (otherwise.quiet) c["recorded"] = false;
            calls[t.name] = std::move(c);
        }
        j["syscalls"] = std::move(calls);
    } else {
        j["rules"] = std::move(rules);
    }
    return j.dump(2, ' ', false, json::error_handler_t::replace);
}

std::string arch_name(std::uint32_t arch) {
    switch (arch) {
        case AUDIT_ARCH_X86_64: return "x86_64";
        case AUDIT_ARCH_I386: return "i386";
        default: return "arch " + std::to_string(arch);
    }
}

std::string syscall_name(std::uint32_t arch, int nr) {
    char* name = nullptr;
    if (arch == AUDIT_ARCH_X86_64 && static_cast<std::uint32_t>(nr) >= x32_syscall_bit &&
        nr != -1) {
        name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X32, nr);
    } else if (arch == AUDIT_ARCH_X86_64) {
        std::string n = detail::native_name(nr);
        if (!n.empty()) return n;
    } else if (arch == AUDIT_ARCH_I386) {
        name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86, nr);
    }
    if (name == nullptr) return "syscall " + std::to_string(nr);
    std::string s = name;
    std::free(name);
    return s;
}

}  // namespace agentjail::seccomp

// SPDX-License-Identifier: Apache-2.0
// The system-call boundary: [seccomp] rules resolved against libseccomp's
// syscall tables and compiled to one BPF program, plus the same rules evaluated
// in userspace so the supervisor can say which rule refused a notified call.
#pragma once

#include "policy/policy.hpp"

#include <linux/filter.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace agentjail::seccomp {

enum class ActionKind {
    allow,
    errno_ret,  // refuse with `err`; compiled as a user notification so it is recorded
    kill,       // kill the process (SECCOMP_RET_KILL_PROCESS); recorded from its exit
    log,        // allowed, but recorded (notification answered with CONTINUE)
    notify,     // the supervisor decides (built-in deciders, e.g. personality queries)
};
// decide() returns notify only for the socket gate's calls, connect, fcntl(F_SETFL) and
// ioctl(FIONBIO): the supervisor makes them itself (launch/socket_gate.hpp). Another
// notify rule's decider answers allow
// (the supervisor lets the call run: SECCOMP_USER_NOTIF_FLAG_CONTINUE, not recorded)
// or errno_ret.

struct Action {
    ActionKind kind = ActionKind::allow;
    int err = 0;  // errno for errno_ret
    // errno_ret only: answered by the kernel itself, not recorded. For refusals that
    // are an expected probe (glibc tries clone3 before every thread), where a round
    // trip to the supervisor and a log line per call would be pure noise.
    bool quiet = false;
};

// One resolved rule, as explain prints it and the supervisor reports it.
struct RuleInfo {
    std::string text;  // e.g. "ioctl if arg1 == TIOCSTI -> errno:EPERM"
    std::string why;   // the rule's reason
    std::string where; // "default.toml:88:1" (Origin::describe())
    Action action;
    bool unless_nested = false;  // left out with [seccomp] nested_sandboxes = true
};

struct Decision {
    Action action;
    int rule = -1;  // index into Program::rules, -1: the default action
};

class Program {
public:
    virtual ~Program() = default;

    // The filter for the native architecture, ready for seccomp(SECCOMP_SET_MODE_FILTER).
    // Non-native ABIs (i386, x32) are handled inside it as the policy says.
    virtual const std::vector<sock_filter>& bpf() const = 0;

    // What the policy says about one call, from the registers the kernel reported
    // (seccomp_notif.data): the same answer the BPF gave, plus which rule.
    virtual Decision decide(std::uint32_t arch, int nr, const std::uint64_t args[6]) const = 0;

    virtual const std::vector<RuleInfo>& rules() const = 0;
    virtual Action default_action() const = 0;

    // True when some action needs the supervisor (errno_ret, log, notify): the
    // launcher then loads the filter with a notification listener.
    virtual bool needs_listener() const = 0;

    // True when the BPF was compiled when agentjail was built (a built-in policy's
    // table, detail::prebuilt_filters()), false when libseccomp compiled it now.
    virtual bool prebuilt() const = 0;

    // Readable form for `agentjail explain`.
    virtual std::string to_text() const = 0;
};

// Compiles a policy's [seccomp] section (and only that: the filter depends on
// nothing else of the policy); nullptr when the policy has none (spec.present).
// Errors carry the rule's file:line:column.
Result<std::shared_ptr<const Program>> compile(const policy::Seccomp& spec);

// The same section for a run that cannot have a notification listener (a filter the
// caller was started under holds one, as WSL2's init does: the kernel allows one per
// chain). Refusals stay refusals, answered by the kernel (not recorded); log rules
// allow; the socket gate, which needs the supervisor, becomes a refusal of every Unix
// socket but a connected pair (socket(AF_UNIX) is EACCES, socketpair stream and
// seqpacket are allowed, so no socket can connect to a path); personality calls the
// policy hands its decider are refused, the query (0xffffffff) with them, since the
// filter cannot tell them apart. The program needs no listener.
Result<std::shared_ptr<const Program>> compile_without_listener(const policy::Seccomp& spec);

// The SECCOMP_RET_* value an action compiles to: allow -> ALLOW, kill -> KILL_PROCESS,
// errno_ret, log and notify -> USER_NOTIF (the supervisor answers them).
std::uint32_t bpf_action(const Action& a);

// The program as JSON text for `agentjail explain --json`: default, rules, forced
// calls, instruction count, and per native syscall what the policy says.
std::string to_json(const Program& program);

// "openat" for (AUDIT_ARCH_X86_64, 257); "syscall 999" when unknown.
std::string syscall_name(std::uint32_t arch, int nr);
// "x86_64", "i386", "x32".
std::string arch_name(std::uint32_t arch);

}  // namespace agentjail::seccomp

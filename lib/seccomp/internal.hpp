// SPDX-License-Identifier: Apache-2.0
// Private to lib/seccomp: named constants, syscall groups, the parsed form of rule
// conditions and the per-syscall decision table that both the BPF and decide() use.
#pragma once

#include "seccomp/seccomp.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentjail::seccomp::detail {

// ---- constants.cc ----

// A named constant usable in conditions (CLONE_NEWUSER, TIOCSTI, AF_VSOCK...).
std::optional<std::uint64_t> constant(std::string_view name);
// The errno value of "EPERM", "ENOSYS", ... (any name glibc knows).
std::optional<int> errno_value(std::string_view name);
// "EPERM" for 1; "errno 4000" when unknown.
std::string errno_text(int err);

// ---- syscalls.cc ----

// The x86_64 number of a syscall name: libseccomp's table, then the calls added to
// the kernel after the libseccomp we build with (open_tree_attr, mseal, ...).
// __NR_SCMP_ERROR when unknown; another negative number when only other
// architectures have it.
int native_nr(std::string_view name);
// The name of an x86_64 number, or "" when neither table knows it.
std::string native_name(int nr);

// How many arguments an x86_64 call takes and how many bits of each the kernel
// reads: 64 (long, size_t, pointers), 32 (int, unsigned, pid_t, uid_t...) or 16
// (umode_t). The kernel truncates a register to the parameter's type, so the bits
// above are the caller's to set freely and a filter must not look at them.
struct ArgWidths {
    unsigned count = 0;
    unsigned bits[6] = {64, 64, 64, 64, 64, 64};
};
// nullopt when agentjail does not know the call's parameters (a call newer than its
// table): a condition on its arguments is then an error, not a guess.
std::optional<ArgWidths> arg_widths(std::string_view name);
// Every name the table knows (for the unit test that it covers every native call).
std::vector<std::string_view> arg_width_names();

// ---- groups.cc ----

struct Group {
    std::string_view name;  // "@mount"
    std::string_view what;  // one line, for docs and explain
    std::vector<std::string_view> members;  // may name calls that x86_64 lacks
};
const std::vector<Group>& groups();
const Group* find_group(std::string_view name);

// ---- rules.cc, conditions.cc ----

enum class CmpOp { eq, ne, lt, le, gt, ge, masked_eq };

// One comparison of one argument: masked_eq compares (arg & a) == b; the others
// compare arg with a, unsigned. Only the low `bits` of the register take part (the
// width the kernel reads of that parameter); a and b fit in them.
struct Cmp {
    unsigned arg = 0;
    CmpOp op = CmpOp::eq;
    std::uint64_t a = 0;
    std::uint64_t b = 0;
    unsigned bits = 64;
};
bool matches(const Cmp& c, const std::uint64_t args[6]);

constexpr std::uint64_t width_mask(unsigned bits) {
    return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

// A set of register values: x & m == v.
struct Cube {
    std::uint64_t m, v;
};
// The values of one argument NOT in any of `cut`, as disjoint cubes; stops early
// (returning more than `limit`) when the result would exceed it.
std::vector<Cube> complement(const std::vector<Cube>& cut, size_t limit);
// A comparison on fewer than 64 bits as the cubes libseccomp can test on a 64-bit
// register (each a masked_eq whose mask lies within the width, so the upper bits
// are ignored): one for == and '& MASK ==', up to `bits` for !=, and one aligned
// block per bit for < <= > >=. Empty for a 64-bit comparison (compiled as it is).
std::vector<Cube> narrowed_cubes(const Cmp& c);

// What answers a `notify` rule: the supervisor's built-in deciders. connect and
// unix_socket belong to the socket gate (rules.cc), which the launcher adds to every
// filter whatever the policy says: connect is made by the supervisor itself
// (launch/socket_gate.hpp), socket(AF_UNIX, ...) is answered from its registers.
// serialize: allowed as it is, but made by the supervisor itself between its other
// calls (fcntl F_SETFL, ioctl FIONBIO), so the blocking mode of a socket it connects
// cannot change under it; a call let through with CONTINUE would run whenever the
// caller is next scheduled, after the supervisor has moved on.
enum class Decider { none, personality, connect, unix_socket, serialize };

// One alternative for one syscall: a rule's action when all comparisons hold.
struct Entry {
    int rule = -1;          // index into the program's rules
    std::vector<Cmp> cmps;  // ANDed, at most one per argument; empty: unconditional
    Action action;
    Decider decider = Decider::none;
};

// Everything said about one native syscall number, in policy order.
struct SyscallTable {
    int nr = 0;
    std::string name;
    std::vector<Entry> entries;
};

// A rule the way explain shows it, plus what later rules took away from it.
struct ResolvedRule {
    RuleInfo info;
    std::vector<std::string> members;      // the native syscalls it names (groups expanded)
    std::vector<std::string> not_native;   // group members x86_64 does not have
    // Calls later unconditional rules took over: (syscall, that rule's position).
    std::vector<std::pair<std::string, std::string>> replaced;
};

// The policy's [seccomp] section with names, actions and conditions resolved and
// the layering applied. Errors carry the offending value's file:line:column.
struct Resolved {
    Action default_action;
    std::string default_where;
    bool nested = false;
    std::vector<ResolvedRule> rules;
    std::vector<std::string> left_out;  // rules dropped by nested_sandboxes = true
    std::vector<SyscallTable> table;    // sorted by nr
};
Result<Resolved> resolve(const policy::Seccomp& spec);

// ---- prebuilt.cc, prebuilt_none.cc and the generated prebuilt_filters.cc ----

// What the BPF is compiled from and nothing else, as text: the format, libseccomp's
// version, the default action and every table entry's action and comparisons. Two
// tables with the same key compile to the same program.
std::string filter_key(const Resolved& r);

// One filter compiled when agentjail was built: the built-in policies' (aj_bpfgen
// writes them into prebuilt_filters.cc, linked into the agentjail command and the
// shared library). A run whose table has the same key loads it instead of running
// libseccomp's rule database and optimiser. It lives in the binary, not in a cache
// file: no sandbox can write it (a file under ~/.cache could be, by a policy that
// binds that directory, and a filter planted there would weaken the next run).
struct Prebuilt {
    std::string_view key;
    const sock_filter* bpf;
    std::size_t len;
    bool listener;
};
// The prebuilt filters; empty where prebuilt_filters.cc is not linked (the weak
// default in prebuilt_none.cc: the tests that compare against libseccomp, aj_bpfgen).
std::span<const Prebuilt> prebuilt_filters();
// Whether compile() looks in prebuilt_filters() (default true); tests switch it off
// to compare a prebuilt program with what libseccomp makes now.
void use_prebuilt(bool on);
bool prebuilt_enabled();

// Parses an action ("allow", "errno:EPERM", "kill", "log", "notify").
std::optional<Action> parse_action(std::string_view text);
std::string action_text(const Action& a);

// The syscalls the launcher makes after loading the filter and before execve: always
// allowed, or it would wait forever on its own listener.
const std::vector<std::string_view>& forced_allow();

}  // namespace agentjail::seccomp::detail

// SPDX-License-Identifier: Apache-2.0
// Unit tests of the compiled seccomp programs: the exported BPF run in a small
// classic-BPF interpreter (struct seccomp_data in, action out), a table of
// (arch, syscall, args) -> action for the built-in policies, decide() checked
// against the BPF for every x86_64 syscall number, and every argument condition
// checked to ignore the upper bits of an int argument, as the kernel does.
#include "policy/policy.hpp"
#include "seccomp/internal.hpp"
#include "seccomp/seccomp.hpp"
#include "bpf_run.hpp"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace agentjail::seccomp {
namespace {

using ajtest::bad_program;
using ajtest::implied;
using ajtest::run_bpf;

std::uint32_t run(const Program& p, std::uint32_t arch, int nr, std::vector<std::uint64_t> args = {},
                  size_t* steps = nullptr) {
    seccomp_data d{};
    d.nr = nr;
    d.arch = arch;
    d.instruction_pointer = 0x401000;
    for (size_t i = 0; i < args.size() && i < 6; ++i) d.args[i] = args[i];
    return run_bpf(p.bpf(), d, steps);
}

std::shared_ptr<const Program> compiled(const std::string& name) {
    auto pol = policy::load(name);
    EXPECT_TRUE(pol.has_value()) << (pol ? "" : pol.error().message());
    if (!pol) return nullptr;
    auto prog = compile(pol->seccomp);
    EXPECT_TRUE(prog.has_value()) << (prog ? "" : prog.error().message());
    if (!prog) return nullptr;
    return *prog;
}

std::shared_ptr<const Program> compiled_text(const std::string& text) {
    auto pol = policy::load_text(text, "t.toml");
    EXPECT_TRUE(pol.has_value()) << (pol ? "" : pol.error().message());
    if (!pol) return nullptr;
    auto prog = compile(pol->seccomp);
    EXPECT_TRUE(prog.has_value()) << (prog ? "" : prog.error().message());
    if (!prog) return nullptr;
    return *prog;
}

constexpr std::uint32_t X86_64 = AUDIT_ARCH_X86_64;
constexpr std::uint32_t I386 = AUDIT_ARCH_I386;
constexpr std::uint32_t ALLOW = SECCOMP_RET_ALLOW;
constexpr std::uint32_t NOTIFY = SECCOMP_RET_USER_NOTIF;
// clone3 is refused by the kernel itself (record = false in default.toml).
constexpr std::uint32_t ENOSYS_RET = SECCOMP_RET_ERRNO | ENOSYS;
constexpr std::uint32_t KILL = SECCOMP_RET_KILL_PROCESS;
constexpr std::uint32_t x32_bit = 0x40000000;

Decision decide(const Program& p, int nr, std::vector<std::uint64_t> args = {},
                std::uint32_t arch = X86_64) {
    std::uint64_t a[6] = {};
    for (size_t i = 0; i < args.size() && i < 6; ++i) a[i] = args[i];
    return p.decide(arch, nr, a);
}

TEST(SeccompInterpreter, RunsAHandWrittenProgram) {
    // A program the interpreter must get right for the rest to mean anything.
    std::vector<sock_filter> prog = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, KILL),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[1])),
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xff),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x10, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, NOTIFY),
        BPF_STMT(BPF_RET | BPF_K, ALLOW),
    };
    seccomp_data d{};
    d.arch = X86_64;
    d.args[1] = 0x110;
    EXPECT_EQ(run_bpf(prog, d), NOTIFY);
    d.args[1] = 0x100;
    EXPECT_EQ(run_bpf(prog, d), ALLOW);
    d.arch = I386;
    EXPECT_EQ(run_bpf(prog, d), KILL);
    prog.pop_back();
    d.arch = X86_64;
    EXPECT_EQ(run_bpf(prog, d), bad_program);
}

TEST(SeccompBpf, MinimalHasNoFilter) {
    auto pol = policy::load("minimal");
    ASSERT_TRUE(pol.has_value());
    auto prog = compile(pol->seccomp);
    ASSERT_TRUE(prog.has_value());
    EXPECT_EQ(*prog, nullptr);
}

TEST(SeccompBpf, DefaultPolicyDecisions) {
    auto p = compiled("default");
    ASSERT_TRUE(p);
    const Program& d = *p;
    EXPECT_TRUE(d.needs_listener());
    EXPECT_EQ(d.default_action().kind, ActionKind::allow);
    EXPECT_LE(d.bpf().size(), static_cast<size_t>(BPF_MAXINSNS));

    struct Case {
        const char* what;
        std::uint32_t arch;
        int nr;
        std::vector<std::uint64_t> args;
        std::uint32_t expect;
    };
    const std::uint64_t tiocsti = TIOCSTI;
    const std::vector<Case> cases = {
        {"ptrace", X86_64, SYS_ptrace, {}, NOTIFY},
        {"read", X86_64, SYS_read, {}, ALLOW},
        {"openat", X86_64, SYS_openat, {}, ALLOW},
        {"ioctl TIOCSTI", X86_64, SYS_ioctl, {0, tiocsti}, NOTIFY},
        {"ioctl TIOCSTI high bits", X86_64, SYS_ioctl, {0, tiocsti | (1ull << 32)}, NOTIFY},
        {"ioctl TIOCSTI 0x123<<32", X86_64, SYS_ioctl, {1, tiocsti | (0x123ull << 32)}, NOTIFY},
        {"ioctl TIOCLINUX", X86_64, SYS_ioctl, {0, TIOCLINUX}, NOTIFY},
        {"ioctl FIONREAD", X86_64, SYS_ioctl, {0, FIONREAD}, ALLOW},
        {"ioctl TCGETS", X86_64, SYS_ioctl, {0, TCGETS}, ALLOW},
        {"clone NEWUSER", X86_64, SYS_clone, {CLONE_NEWUSER | SIGCHLD}, NOTIFY},
        {"clone NEWNET", X86_64, SYS_clone, {CLONE_NEWNET}, NOTIFY},
        {"clone NEWNS", X86_64, SYS_clone, {CLONE_NEWNS | SIGCHLD}, NOTIFY},
        {"clone SIGCHLD (fork)", X86_64, SYS_clone, {SIGCHLD}, ALLOW},
        {"clone thread",
         X86_64,
         SYS_clone,
         {CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
          CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID},
         ALLOW},
        {"clone3", X86_64, SYS_clone3, {}, ENOSYS_RET},
        {"unshare", X86_64, SYS_unshare, {CLONE_NEWUSER}, NOTIFY},
        {"unshare bit 40", X86_64, SYS_unshare, {1ull << 40}, NOTIFY},
        {"setns", X86_64, SYS_setns, {}, NOTIFY},
        {"mount", X86_64, SYS_mount, {}, NOTIFY},
        {"umount2", X86_64, SYS_umount2, {}, NOTIFY},
        {"pivot_root", X86_64, SYS_pivot_root, {}, NOTIFY},
        {"open_tree", X86_64, SYS_open_tree, {}, NOTIFY},
        {"fsopen", X86_64, SYS_fsopen, {}, NOTIFY},
        {"mount_setattr", X86_64, SYS_mount_setattr, {}, NOTIFY},
        {"open_tree_attr (467, newer than libseccomp)", X86_64, 467, {}, NOTIFY},
        {"bpf", X86_64, SYS_bpf, {}, NOTIFY},
        {"io_uring_setup", X86_64, SYS_io_uring_setup, {}, NOTIFY},
        {"userfaultfd", X86_64, SYS_userfaultfd, {}, NOTIFY},
        {"keyctl", X86_64, SYS_keyctl, {}, NOTIFY},
        {"open_by_handle_at", X86_64, SYS_open_by_handle_at, {}, NOTIFY},
        {"kexec_load", X86_64, SYS_kexec_load, {}, NOTIFY},
        {"init_module", X86_64, SYS_init_module, {}, NOTIFY},
        {"iopl", X86_64, SYS_iopl, {}, NOTIFY},
        {"settimeofday", X86_64, SYS_settimeofday, {}, NOTIFY},
        {"uselib", X86_64, SYS_uselib, {}, NOTIFY},
        {"socket AF_INET", X86_64, SYS_socket, {AF_INET, SOCK_STREAM}, ALLOW},
        // The socket gate: AF_UNIX datagram sockets refused (and recorded), every
        // connect made by the supervisor.
        {"socket AF_UNIX", X86_64, SYS_socket, {AF_UNIX, SOCK_STREAM}, ALLOW},
        {"socket AF_UNIX cloexec", X86_64, SYS_socket, {AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC}, ALLOW},
        {"socket AF_UNIX dgram|cloexec", X86_64, SYS_socket, {AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC}, NOTIFY},
        {"socket AF_UNIX dgram|1<<32", X86_64, SYS_socket, {AF_UNIX, SOCK_DGRAM | (1ull << 32)}, NOTIFY},
        {"socket AF_UNIX raw", X86_64, SYS_socket, {AF_UNIX, SOCK_RAW}, NOTIFY},
        {"socket AF_UNIX seqpacket", X86_64, SYS_socket, {AF_UNIX, SOCK_SEQPACKET}, ALLOW},
        {"fcntl F_SETFL", X86_64, SYS_fcntl, {3, F_SETFL, 0x800}, NOTIFY},
        {"fcntl F_SETFL|1<<32", X86_64, SYS_fcntl, {3, F_SETFL | (1ull << 32), 0x800}, NOTIFY},
        {"fcntl F_GETFL", X86_64, SYS_fcntl, {3, F_GETFL}, ALLOW},
        {"ioctl FIONBIO", X86_64, SYS_ioctl, {3, FIONBIO}, NOTIFY},
        {"socket AF_UNIX|1<<32", X86_64, SYS_socket, {AF_UNIX | (1ull << 32), SOCK_DGRAM}, NOTIFY},
        {"socketpair AF_UNIX", X86_64, SYS_socketpair, {AF_UNIX, SOCK_DGRAM}, NOTIFY},
        {"connect", X86_64, SYS_connect, {3, 0x1000, 16}, NOTIFY},
        {"socket AF_NETLINK route", X86_64, SYS_socket, {AF_NETLINK, SOCK_RAW, 0}, ALLOW},
        {"socket AF_NETLINK audit", X86_64, SYS_socket, {AF_NETLINK, SOCK_RAW, 9}, NOTIFY},
        {"socket AF_VSOCK", X86_64, SYS_socket, {AF_VSOCK, SOCK_STREAM}, NOTIFY},
        {"socket AF_ALG", X86_64, SYS_socket, {AF_ALG, SOCK_SEQPACKET}, NOTIFY},
        {"socket AF_PACKET", X86_64, SYS_socket, {AF_PACKET, SOCK_RAW}, NOTIFY},
        {"socket AF_KEY", X86_64, SYS_socket, {AF_KEY, SOCK_RAW}, NOTIFY},
        // The kernel reads int arguments' low 32 bits: AF_INET|1<<32 is AF_INET to it,
        // and NETLINK_AUDIT|1<<32 the audit protocol.
        {"socket AF_INET|1<<32", X86_64, SYS_socket, {AF_INET | (1ull << 32)}, ALLOW},
        {"socket AF_NETLINK audit|1<<32",
         X86_64,
         SYS_socket,
         {AF_NETLINK, SOCK_RAW, 9 | (1ull << 32)},
         NOTIFY},
        {"socket AF_NETLINK|1<<32 audit",
         X86_64,
         SYS_socket,
         {AF_NETLINK | (1ull << 32), SOCK_RAW, 9},
         NOTIFY},
        {"socket AF_NETLINK uevent|0xffffffff<<32",
         X86_64,
         SYS_socket,
         {AF_NETLINK, SOCK_RAW, 15 | 0xffffffff00000000ull},
         NOTIFY},
        {"socket AF_NETLINK route|1<<63",
         X86_64,
         SYS_socket,
         {AF_NETLINK, SOCK_RAW, 1ull << 63},
         ALLOW},
        {"socket AF_VSOCK|1<<32", X86_64, SYS_socket, {AF_VSOCK | (1ull << 32)}, NOTIFY},
        {"socketpair AF_AX25|1<<40", X86_64, SYS_socketpair, {3 | (1ull << 40)}, NOTIFY},
        {"personality READ_IMPLIES_EXEC|1<<32",
         X86_64,
         SYS_personality,
         {0x0400000 | (1ull << 32)},
         NOTIFY},
        {"personality 0|1<<32", X86_64, SYS_personality, {1ull << 32}, ALLOW},
        {"personality 0", X86_64, SYS_personality, {0}, ALLOW},
        {"personality PER_LINUX32", X86_64, SYS_personality, {0x8}, ALLOW},
        {"personality UNAME26|PER_LINUX32", X86_64, SYS_personality, {0x20008}, ALLOW},
        {"personality READ_IMPLIES_EXEC", X86_64, SYS_personality, {0x0400000}, NOTIFY},
        {"personality query", X86_64, SYS_personality, {0xffffffff}, NOTIFY},
        {"i386 read", I386, 3, {}, KILL},
        {"i386 unshare", I386, 310, {CLONE_NEWUSER}, KILL},
        {"i386 socketcall", I386, 102, {}, KILL},
        {"x32 read", X86_64, static_cast<int>(x32_bit | 0), {}, KILL},
        {"x32 unshare", X86_64, static_cast<int>(x32_bit | 272), {CLONE_NEWUSER}, KILL},
        {"x32 ioctl", X86_64, static_cast<int>(x32_bit | 514), {}, KILL},
        {"nr -1", X86_64, -1, {}, ALLOW},
        {"nr 999", X86_64, 999, {}, ALLOW},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(run(d, c.arch, c.nr, c.args), c.expect) << c.what;
        EXPECT_EQ(implied(d, decide(d, c.nr, c.args, c.arch)), c.expect) << c.what << " (decide)";
    }

    // What the supervisor answers for the notified ones.
    auto ptrace = decide(d, SYS_ptrace);
    EXPECT_EQ(ptrace.action.kind, ActionKind::errno_ret);
    EXPECT_EQ(ptrace.action.err, EPERM);
    ASSERT_GE(ptrace.rule, 0);
    EXPECT_EQ(d.rules()[static_cast<size_t>(ptrace.rule)].text.rfind("@debug ", 0), 0u);
    EXPECT_EQ(d.rules()[static_cast<size_t>(ptrace.rule)].where.rfind("default.toml:", 0), 0u);
    EXPECT_EQ(decide(d, SYS_clone3).action.err, ENOSYS);
    EXPECT_EQ(decide(d, SYS_fsopen).action.err, ENOSYS);
    EXPECT_EQ(decide(d, 467).action.err, ENOSYS);
    EXPECT_EQ(decide(d, SYS_mount).action.err, EPERM);
    EXPECT_EQ(decide(d, SYS_socket, {AF_VSOCK, SOCK_STREAM}).action.err, EAFNOSUPPORT);
    EXPECT_EQ(decide(d, SYS_ioctl, {0, tiocsti | (1ull << 32)}).action.err, EPERM);
    auto query = decide(d, SYS_personality, {0xffffffff});
    EXPECT_EQ(query.action.kind, ActionKind::allow);
    EXPECT_GE(query.rule, 0);
    EXPECT_EQ(decide(d, SYS_personality, {0x0040000}).action.err, EPERM);
    EXPECT_EQ(decide(d, SYS_read).rule, -1);
    EXPECT_EQ(decide(d, SYS_read).action.kind, ActionKind::allow);
    EXPECT_EQ(decide(d, 3, {}, I386).action.kind, ActionKind::kill);
    // The socket gate's answers.
    EXPECT_EQ(decide(d, SYS_connect, {3, 0x1000, 16}).action.kind, ActionKind::notify);
    EXPECT_EQ(decide(d, SYS_socket, {AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC}).action.err, EACCES);
    EXPECT_EQ(decide(d, SYS_socketpair, {AF_UNIX, SOCK_DGRAM}).action.err, EACCES);
    EXPECT_EQ(decide(d, SYS_socket, {AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK}).action.kind, ActionKind::allow);
    EXPECT_EQ(decide(d, SYS_socket, {AF_UNIX, SOCK_SEQPACKET}).action.kind, ActionKind::allow);
    EXPECT_EQ(decide(d, SYS_socket, {AF_INET, SOCK_DGRAM}).action.kind, ActionKind::allow);
    auto gate = decide(d, SYS_connect, {3, 0x1000, 16});
    ASSERT_GE(gate.rule, 0);
    EXPECT_EQ(d.rules()[static_cast<size_t>(gate.rule)].where, "built-in");
}

TEST(SeccompBpf, StrictPolicyDecisions) {
    auto p = compiled("strict");
    ASSERT_TRUE(p);
    const Program& s = *p;
    EXPECT_EQ(s.default_action().kind, ActionKind::errno_ret);
    EXPECT_TRUE(s.needs_listener());
    EXPECT_LE(s.bpf().size(), static_cast<size_t>(BPF_MAXINSNS));
    const std::uint64_t tiocsti = TIOCSTI;
    struct Case {
        const char* what;
        std::uint32_t arch;
        int nr;
        std::vector<std::uint64_t> args;
        std::uint32_t expect;
    };
    const std::vector<Case> cases = {
        {"read", X86_64, SYS_read, {}, ALLOW},
        {"execve", X86_64, SYS_execve, {}, ALLOW},
        {"sendmsg", X86_64, SYS_sendmsg, {}, ALLOW},
        {"exit_group", X86_64, SYS_exit_group, {}, ALLOW},
        {"unknown nr 999", X86_64, 999, {}, NOTIFY},
        {"ptrace", X86_64, SYS_ptrace, {}, NOTIFY},
        {"ioctl FIONREAD", X86_64, SYS_ioctl, {0, FIONREAD}, ALLOW},
        {"ioctl TCGETS", X86_64, SYS_ioctl, {0, TCGETS}, ALLOW},
        {"ioctl TIOCSTI", X86_64, SYS_ioctl, {0, tiocsti}, NOTIFY},
        {"ioctl TIOCSTI high", X86_64, SYS_ioctl, {0, tiocsti | (1ull << 32)}, NOTIFY},
        {"ioctl TIOCLINUX", X86_64, SYS_ioctl, {0, TIOCLINUX}, NOTIFY},
        {"ioctl TIOCSTI+1", X86_64, SYS_ioctl, {0, tiocsti + 1}, ALLOW},
        {"clone SIGCHLD", X86_64, SYS_clone, {SIGCHLD}, ALLOW},
        {"clone NEWUSER", X86_64, SYS_clone, {CLONE_NEWUSER | SIGCHLD}, NOTIFY},
        {"clone3", X86_64, SYS_clone3, {}, ENOSYS_RET},
        {"socket AF_INET", X86_64, SYS_socket, {AF_INET, SOCK_STREAM}, ALLOW},
        {"socket AF_VSOCK", X86_64, SYS_socket, {AF_VSOCK, SOCK_STREAM}, NOTIFY},
        {"socket AF_UNIX", X86_64, SYS_socket, {AF_UNIX, SOCK_STREAM}, NOTIFY},
        {"connect", X86_64, SYS_connect, {3, 0x1000, 16}, NOTIFY},
        {"socket AF_UNIX raw", X86_64, SYS_socket, {AF_UNIX, SOCK_RAW}, NOTIFY},
        {"fcntl F_SETFL", X86_64, SYS_fcntl, {3, F_SETFL, 0}, NOTIFY},
        {"fcntl F_GETFL", X86_64, SYS_fcntl, {3, F_GETFL, 0}, ALLOW},
        {"ioctl FIONBIO", X86_64, SYS_ioctl, {3, FIONBIO}, NOTIFY},
        {"personality 0", X86_64, SYS_personality, {0}, ALLOW},
        {"personality 0x400000", X86_64, SYS_personality, {0x400000}, NOTIFY},
        {"i386", I386, 3, {}, KILL},
        {"x32", X86_64, static_cast<int>(x32_bit | 1), {}, KILL},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(run(s, c.arch, c.nr, c.args), c.expect) << c.what;
        EXPECT_EQ(implied(s, decide(s, c.nr, c.args, c.arch)), c.expect) << c.what << " (decide)";
    }
    auto unknown = decide(s, 999);
    EXPECT_EQ(unknown.rule, -1);
    EXPECT_EQ(unknown.action.kind, ActionKind::errno_ret);
    EXPECT_EQ(unknown.action.err, EPERM);
    EXPECT_EQ(decide(s, SYS_clone3).action.err, ENOSYS);
    EXPECT_EQ(decide(s, SYS_ioctl, {0, tiocsti}).action.err, EPERM);
    EXPECT_EQ(decide(s, SYS_personality, {0xffffffff}).action.kind, ActionKind::allow);
    // strict's own "socket if arg0 == AF_UNIX -> allow" became the gate's.
    EXPECT_EQ(decide(s, SYS_socket, {AF_UNIX, SOCK_DGRAM}).action.err, EACCES);
    EXPECT_EQ(decide(s, SYS_socket, {AF_UNIX, SOCK_STREAM}).action.kind, ActionKind::allow);
    EXPECT_EQ(decide(s, SYS_socketpair, {AF_UNIX, SOCK_DGRAM}).action.err, EACCES);
    EXPECT_EQ(decide(s, SYS_connect, {3, 0x1000, 16}).action.kind, ActionKind::notify);
}

// Argument sets that exercise the comparisons: zero, the interesting constants, high
// bits (what the kernel truncates), every flag, and values just around them.
std::vector<std::vector<std::uint64_t>> argument_sets() {
    std::vector<std::vector<std::uint64_t>> sets = {
        {},
        {SIGCHLD},
        {CLONE_NEWUSER | SIGCHLD},
        {CLONE_NEWNS, 0, 0},
        {0, TIOCSTI},
        {0, TIOCSTI | (1ull << 32)},
        {0, TIOCLINUX},
        {0, FIONREAD},
        {0, TIOCSTI + 1},
        {0, TIOCSTI - 1},
        {AF_INET, SOCK_STREAM, 0},
        {AF_UNIX, SOCK_STREAM, 0},
        {AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0},
        {AF_NETLINK, SOCK_RAW, 9},
        {AF_NETLINK, SOCK_RAW, 15},
        {AF_NETLINK, SOCK_RAW, 0},
        {AF_NETLINK + 1},
        {AF_VSOCK},
        {AF_KEY},
        {AF_KEY | (1ull << 32)},
        {0xffffffff},
        {0x1ffffffff},
        {0x20008},
        {0x400000},
        {~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull},
        {0x8000000000000000ull, 0x80000000ull, 0x7fffffffull},
    };
    for (int b = 0; b < 64; b += 3) sets.push_back({1ull << b, 1ull << b, 1ull << b});
    return sets;
}

void sweep(const Program& p, const std::string& name) {
    const auto sets = argument_sets();
    for (std::uint32_t arch : {X86_64, I386}) {
        for (int nr = 0; nr <= 470; ++nr) {
            for (std::uint32_t bits : {0u, x32_bit}) {
                const int n = static_cast<int>(static_cast<std::uint32_t>(nr) | bits);
                for (const auto& args : sets) {
                    std::uint32_t bpf = run(p, arch, n, args);
                    ASSERT_NE(bpf, bad_program) << name << " nr " << n;
                    Decision d = decide(p, n, args, arch);
                    ASSERT_EQ(implied(p, d), bpf)
                        << name << ": arch " << arch_name(arch) << " nr " << n << " ("
                        << syscall_name(arch, n) << ") args[0]=" << (args.empty() ? 0 : args[0])
                        << " args[1]=" << (args.size() > 1 ? args[1] : 0);
                    // Nothing but an allowed call is let run without the supervisor.
                    if (d.action.kind == ActionKind::allow && d.rule < 0) {
                        ASSERT_EQ(bpf, ALLOW);
                    }
                }
            }
        }
    }
}

TEST(SeccompBpf, DecideAgreesWithTheBpfForEverySyscallDefault) {
    auto p = compiled("default");
    ASSERT_TRUE(p);
    sweep(*p, "default");
}

TEST(SeccompBpf, DecideAgreesWithTheBpfForEverySyscallStrict) {
    auto p = compiled("strict");
    ASSERT_TRUE(p);
    sweep(*p, "strict");
}

// The same policies for a run without a listener (another filter holds the one the
// kernel allows): nothing reaches the supervisor, every refusal stays a refusal with
// its errno, and no Unix socket but a connected pair can be made.
TEST(SeccompBpf, WithoutAListenerTheKernelAnswersEverything) {
    for (const char* name : {"default", "strict"}) {
        SCOPED_TRACE(name);
        auto pol = policy::load(name);
        ASSERT_TRUE(pol);
        auto usual = compile(pol->seccomp);
        auto alone = compile_without_listener(pol->seccomp);
        ASSERT_TRUE(usual && alone) << (alone ? "" : alone.error().message());
        const Program& u = **usual;
        const Program& a = **alone;
        EXPECT_FALSE(a.needs_listener());
        // Every native number with no arguments and a few of each gated call: a call the
        // usual program refuses (in the BPF or through the supervisor) is refused here
        // by the kernel, with the errno decide() gives; one it allows is allowed.
        for (int nr = 0; nr < 470; ++nr) {
            const std::uint32_t got = run(a, X86_64, nr);
            ASSERT_NE(got, NOTIFY) << syscall_name(X86_64, nr);
            ASSERT_NE(got, static_cast<std::uint32_t>(SECCOMP_RET_LOG)) << syscall_name(X86_64, nr);
            const Decision d = decide(u, nr);
            if (d.action.kind == ActionKind::errno_ret) {
                EXPECT_EQ(got, SECCOMP_RET_ERRNO | static_cast<std::uint32_t>(d.action.err)) << syscall_name(X86_64, nr);
            }
            if (d.action.kind == ActionKind::kill) {
                EXPECT_EQ(got, KILL) << syscall_name(X86_64, nr);
            }
        }
        const std::uint32_t eacces = SECCOMP_RET_ERRNO | EACCES;
        EXPECT_EQ(run(a, X86_64, SYS_socket, {AF_UNIX, SOCK_STREAM}), eacces);
        EXPECT_EQ(run(a, X86_64, SYS_socket, {AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC}), eacces);
        EXPECT_EQ(run(a, X86_64, SYS_socket, {AF_UNIX, SOCK_DGRAM}), eacces);
        EXPECT_EQ(run(a, X86_64, SYS_socketpair, {AF_UNIX, SOCK_STREAM}), ALLOW);
        const std::uint32_t dgram_pair = run(a, X86_64, SYS_socketpair, {AF_UNIX, SOCK_DGRAM});
        EXPECT_EQ(dgram_pair & SECCOMP_RET_ACTION_FULL, static_cast<std::uint32_t>(SECCOMP_RET_ERRNO)) << dgram_pair;
        EXPECT_EQ(run(a, X86_64, SYS_socketpair, {AF_UNIX, SOCK_SEQPACKET}), ALLOW);
        EXPECT_EQ(run(a, X86_64, SYS_socket, {AF_INET, SOCK_STREAM}), ALLOW);
        EXPECT_EQ(run(a, X86_64, SYS_connect, {3, 0, 16}), ALLOW);
        EXPECT_EQ(run(a, X86_64, SYS_fcntl, {3, F_SETFL, O_NONBLOCK}), ALLOW);
        // The query cannot be told from a change in the filter alone: refused too.
        EXPECT_EQ(run(a, X86_64, SYS_personality, {0xffffffffu}), SECCOMP_RET_ERRNO | EPERM);
        EXPECT_EQ(run(a, X86_64, SYS_personality, {0x0040000}), SECCOMP_RET_ERRNO | EPERM);
        EXPECT_EQ(run(a, X86_64, SYS_personality, {0}), ALLOW);
        // decide() says what the BPF does.
        std::uint64_t q[6] = {0xffffffffu};
        EXPECT_EQ(a.decide(X86_64, SYS_personality, q).action.kind, ActionKind::errno_ret);
        std::uint64_t us[6] = {AF_UNIX, SOCK_STREAM};
        EXPECT_EQ(a.decide(X86_64, SYS_socket, us).action.err, EACCES);
        EXPECT_EQ(run(a, I386, 1), KILL);
    }
}

TEST(SeccompBpf, NestedSandboxesLeaveTheNamespaceRulesOut) {
    auto p = compiled_text("extends = 'default'\n[seccomp]\nnested_sandboxes = true\n");
    ASSERT_TRUE(p);
    EXPECT_EQ(run(*p, X86_64, SYS_unshare, {CLONE_NEWUSER}), ALLOW);
    EXPECT_EQ(run(*p, X86_64, SYS_clone, {CLONE_NEWUSER | SIGCHLD}), ALLOW);
    EXPECT_EQ(run(*p, X86_64, SYS_clone3), ALLOW);
    EXPECT_EQ(run(*p, X86_64, SYS_mount), ALLOW);
    EXPECT_EQ(run(*p, X86_64, SYS_pivot_root), ALLOW);
    // The rest of the baseline stays.
    EXPECT_EQ(run(*p, X86_64, SYS_ptrace), NOTIFY);
    EXPECT_EQ(run(*p, X86_64, SYS_ioctl, {0, TIOCSTI}), NOTIFY);
    EXPECT_EQ(run(*p, I386, 3), KILL);
    EXPECT_NE(p->to_text().find("left out (nested_sandboxes = true)"), std::string::npos);
    sweep(*p, "nested");
}

TEST(SeccompBpf, AProjectCanReallowACall) {
    auto p = compiled_text(
        "extends = 'default'\n[[seccomp.rule]]\nsyscalls = ['ptrace']\naction = 'allow'\n"
        "why = 'the project debugs its tests with gdb'\n");
    ASSERT_TRUE(p);
    EXPECT_EQ(run(*p, X86_64, SYS_ptrace), ALLOW);
    EXPECT_EQ(run(*p, X86_64, SYS_process_vm_readv), NOTIFY);  // the rest of @debug stays
    auto d = decide(*p, SYS_ptrace);
    ASSERT_GE(d.rule, 0);
    EXPECT_EQ(p->rules()[static_cast<size_t>(d.rule)].where, "t.toml:2:1");
    EXPECT_NE(p->to_text().find("replaced: ptrace by t.toml:2:1"), std::string::npos)
        << p->to_text();
}

TEST(SeccompBpf, KillAndLogAndErrnoRules) {
    auto p = compiled_text(R"([seccomp]
[[seccomp.rule]]
syscalls = ["ptrace"]
action = "kill"
[[seccomp.rule]]
syscalls = ["getpid"]
action = "log"
[[seccomp.rule]]
syscalls = ["mkdir"]
action = "errno:EROFS"
[[seccomp.rule]]
syscalls = ["kill"]
args = ["arg0 <= 1", "arg1 != 0"]
action = "errno:EPERM"
[[seccomp.rule]]
syscalls = ["mmap"]
args = ["arg2 & PROT_WRITE|PROT_EXEC == PROT_WRITE|PROT_EXEC"]
action = "errno:EACCES"
[[seccomp.rule]]
syscalls = ["lseek"]
args = ["arg2 >= 3"]
action = "errno:EINVAL"
[[seccomp.rule]]
syscalls = ["dup2"]
args = ["arg1 > 1000", "arg0 < 3"]
action = "errno:EBADF"
)");
    ASSERT_TRUE(p);
    EXPECT_EQ(run(*p, X86_64, SYS_ptrace), KILL);
    EXPECT_EQ(decide(*p, SYS_ptrace).action.kind, ActionKind::kill);
    EXPECT_EQ(run(*p, X86_64, SYS_getpid), NOTIFY);
    EXPECT_EQ(decide(*p, SYS_getpid).action.kind, ActionKind::log);
    EXPECT_EQ(decide(*p, SYS_mkdir).action.err, EROFS);
    EXPECT_EQ(run(*p, X86_64, SYS_kill, {1, 9}), NOTIFY);
    EXPECT_EQ(run(*p, X86_64, SYS_kill, {1, 0}), ALLOW);
    EXPECT_EQ(run(*p, X86_64, SYS_kill, {2, 9}), ALLOW);
    EXPECT_EQ(run(*p, X86_64, SYS_mmap, {0, 4096, 7}), NOTIFY);
    EXPECT_EQ(run(*p, X86_64, SYS_mmap, {0, 4096, 3}), ALLOW);
    EXPECT_EQ(run(*p, X86_64, SYS_lseek, {0, 0, 3}), NOTIFY);
    EXPECT_EQ(run(*p, X86_64, SYS_lseek, {0, 0, 2}), ALLOW);
    // lseek's whence is an unsigned int: 1<<33 is whence 0 to the kernel.
    EXPECT_EQ(run(*p, X86_64, SYS_lseek, {0, 0, 1ull << 33}), ALLOW);
    EXPECT_EQ(run(*p, X86_64, SYS_lseek, {0, 0, (1ull << 33) | 3}), NOTIFY);
    EXPECT_EQ(run(*p, X86_64, SYS_dup2, {2, 1001}), NOTIFY);
    EXPECT_EQ(run(*p, X86_64, SYS_dup2, {3, 1001}), ALLOW);
    EXPECT_EQ(run(*p, X86_64, SYS_dup2, {2, 1000}), ALLOW);
    sweep(*p, "kinds");
}

TEST(SeccompBpf, ExceptionsToAnUnconditionalRule) {
    // In a default-deny policy, "allow ioctl except TIOCSTI": libseccomp has no else
    // branch, so the allow is compiled over the complement of the exceptions.
    auto p = compiled_text(R"([seccomp]
default = "errno:EPERM"
[[seccomp.rule]]
syscalls = ["ioctl"]
action = "allow"
[[seccomp.rule]]
syscalls = ["ioctl"]
args = ["arg1 & 0xffffffff == TIOCSTI"]
action = "errno:EIO"
[[seccomp.rule]]
syscalls = ["ioctl"]
args = ["arg1 == 0x1234"]
action = "kill"
)");
    ASSERT_TRUE(p);
    EXPECT_EQ(run(*p, X86_64, SYS_ioctl, {0, FIONREAD}), ALLOW);
    EXPECT_EQ(run(*p, X86_64, SYS_ioctl, {0, TIOCSTI}), NOTIFY);
    EXPECT_EQ(run(*p, X86_64, SYS_ioctl, {0, TIOCSTI | (7ull << 32)}), NOTIFY);
    EXPECT_EQ(decide(*p, SYS_ioctl, {0, TIOCSTI}).action.err, EIO);
    EXPECT_EQ(run(*p, X86_64, SYS_ioctl, {0, 0x1234}), KILL);
    // ioctl's request is an unsigned int: the kernel runs 0x1234|1<<40 as 0x1234.
    EXPECT_EQ(run(*p, X86_64, SYS_ioctl, {0, 0x1234 | (1ull << 40)}), KILL);
    EXPECT_EQ(run(*p, X86_64, SYS_read), NOTIFY);
    sweep(*p, "exceptions");
}

// ---- int arguments: only the low bits count --------------------------------

// Every x86_64 call has its parameters in the table, so a condition on any of them
// is narrowed (or refused), never compared as 64 bits by accident.
TEST(SeccompWidths, EveryNativeCallHasItsParameters) {
    std::vector<std::string> missing;
    size_t natives = 0;
    for (int nr = 0; nr < 1024; ++nr) {
        std::string name = detail::native_name(nr);
        if (name.empty()) continue;
        ++natives;
        if (!detail::arg_widths(name)) missing.push_back(name);
    }
    EXPECT_TRUE(missing.empty()) << "no parameter types for: " << ::testing::PrintToString(missing);
    EXPECT_GT(natives, 360u);
    for (auto n : detail::arg_width_names())
        EXPECT_GE(detail::native_nr(n), 0) << n << " is not an x86_64 call";

    auto w = detail::arg_widths("socket");
    ASSERT_TRUE(w);
    EXPECT_EQ(w->count, 3u);
    EXPECT_EQ(w->bits[0], 32u);
    EXPECT_EQ(w->bits[2], 32u);
    w = detail::arg_widths("ioctl");
    ASSERT_TRUE(w);
    EXPECT_EQ(w->count, 3u);
    EXPECT_EQ(w->bits[1], 32u);
    EXPECT_EQ(w->bits[2], 64u);
    w = detail::arg_widths("clone");
    ASSERT_TRUE(w);
    for (unsigned i = 0; i < w->count; ++i) EXPECT_EQ(w->bits[i], 64u) << i;
    w = detail::arg_widths("chmod");
    ASSERT_TRUE(w);
    EXPECT_EQ(w->bits[1], 16u);  // umode_t
    w = detail::arg_widths("mmap");
    ASSERT_TRUE(w);
    EXPECT_EQ(w->count, 6u);
    EXPECT_EQ(w->bits[4], 32u);  // the fd, narrowed by fget()
    EXPECT_EQ(w->bits[5], 64u);
    w = detail::arg_widths("getpid");
    ASSERT_TRUE(w);
    EXPECT_EQ(w->count, 0u);
}

namespace {
// A value of c's argument that satisfies c (want = true) or not, within its width.
std::optional<std::uint64_t> value_for(const detail::Cmp& c, bool want) {
    const std::uint64_t w = detail::width_mask(c.bits);
    switch (c.op) {
    case detail::CmpOp::eq: return want ? c.a : (c.a ^ 1) & w;
    case detail::CmpOp::ne: return want ? (c.a ^ 1) & w : c.a;
    case detail::CmpOp::lt: return want ? c.a - 1 : c.a;  // a > 0: the parser refuses < 0
    case detail::CmpOp::le: return want ? c.a : c.a + 1;
    case detail::CmpOp::gt: return want ? c.a + 1 : c.a;
    case detail::CmpOp::ge:
        if (want) return c.a;
        if (c.a == 0) return std::nullopt;
        return c.a - 1;
    case detail::CmpOp::masked_eq:
        if (want) return c.b;
        return c.b ^ (c.a & (~c.a + 1));  // flip the mask's lowest bit
    }
    return std::nullopt;
}

// For every conditional entry of the policy's table: argument vectors that meet all
// its comparisons, and ones that miss exactly one; then the same vectors with the
// upper bits of every narrow argument set in several ways. The BPF and decide() must
// answer exactly as for the plain vector. Returns how many entries were checked.
size_t check_high_bits(const std::string& text_or_name, bool builtin, std::string* netlink) {
    auto pol = builtin ? policy::load(text_or_name) : policy::load_text(text_or_name, "t.toml");
    EXPECT_TRUE(pol.has_value()) << (pol ? "" : pol.error().message());
    if (!pol) return 0;
    auto prog = compile(pol->seccomp);
    EXPECT_TRUE(prog.has_value()) << (prog ? "" : prog.error().message());
    if (!prog || !*prog) return 0;
    auto res = detail::resolve(pol->seccomp);
    EXPECT_TRUE(res.has_value());
    if (!res) return 0;
    const Program& p = **prog;
    const std::uint64_t highs[] = {1ull << 32, 0xffffffff00000000ull, 1ull << 63, 0x123ull << 32,
                                   0xdead0000beef0000ull};
    size_t checked = 0;
    for (const auto& t : res->table) {
        auto widths = detail::arg_widths(t.name);
        for (const auto& e : t.entries) {
            if (e.cmps.empty()) continue;
            EXPECT_TRUE(widths) << t.name;
            if (!widths) continue;
            ++checked;
            std::vector<std::vector<std::uint64_t>> vectors;
            std::vector<std::uint64_t> base(6, 0);
            bool ok = true;
            for (const auto& c : e.cmps) {
                auto v = value_for(c, true);
                if (!v)
                    ok = false;
                else
                    base[c.arg] = *v;
            }
            if (ok) vectors.push_back(base);
            for (const auto& c : e.cmps) {
                auto v = value_for(c, false);
                if (!v) continue;
                auto miss = base;
                miss[c.arg] = *v;
                vectors.push_back(miss);
            }
            for (const auto& args : vectors) {
                const std::uint32_t plain = run(p, X86_64, t.nr, args);
                const std::uint32_t plain_d = implied(p, decide(p, t.nr, args));
                EXPECT_EQ(plain, plain_d) << t.name;
                for (std::uint64_t h : highs) {
                    auto high = args;
                    for (unsigned i = 0; i < widths->count; ++i) {
                        if (widths->bits[i] >= 64) continue;
                        high[i] = (high[i] & detail::width_mask(widths->bits[i])) |
                                  (h & ~detail::width_mask(widths->bits[i]));
                        if (widths->bits[i] == 16) high[i] |= 0xffff0000ull;
                    }
                    EXPECT_EQ(run(p, X86_64, t.nr, high), plain)
                        << text_or_name.substr(0, 40) << ": " << t.name << " rule "
                        << p.rules()[static_cast<size_t>(e.rule)].text << " args "
                        << ::testing::PrintToString(args) << " with upper bits "
                        << ::testing::PrintToString(high);
                    EXPECT_EQ(implied(p, decide(p, t.nr, high)), plain)
                        << t.name << " (decide) " << p.rules()[static_cast<size_t>(e.rule)].text;
                }
            }
            if (netlink && t.name == "socket" && e.cmps.size() == 2 && e.cmps[1].arg == 2)
                *netlink += p.rules()[static_cast<size_t>(e.rule)].text + "\n";
        }
    }
    return checked;
}
}  // namespace

// Every argument-filtered rule of the built-in policies, and one of every form on
// int, unsigned and umode_t parameters: the outcome never depends on the upper
// bits, which the kernel throws away. (CVE-2019-10063 was this for TIOCSTI.)
TEST(SeccompBpf, HighBitsOfIntArgumentsNeverChangeTheOutcome) {
    std::string netlink;
    EXPECT_GE(check_high_bits("default", true, &netlink), 20u);
    EXPECT_NE(netlink.find("NETLINK_AUDIT"), std::string::npos) << netlink;
    EXPECT_NE(netlink.find("NETLINK_KOBJECT_UEVENT"), std::string::npos) << netlink;
    EXPECT_GE(check_high_bits("strict", true, nullptr), 20u);
    EXPECT_GE(check_high_bits("extends = 'default'\n[seccomp]\nnested_sandboxes = true\n", false,
                              nullptr),
              10u);
    const std::string forms = R"([seccomp]
[[seccomp.rule]]
syscalls = ["socket"]
args = ["arg0 == AF_INET6", "arg1 != SOCK_STREAM", "arg2 < 7"]
action = "errno:EACCES"
[[seccomp.rule]]
syscalls = ["kill"]
args = ["arg0 <= 1", "arg1 >= 9"]
action = "errno:EPERM"
[[seccomp.rule]]
syscalls = ["setsockopt"]
args = ["arg1 > 200", "arg2 & 0xf0 == 0x30"]
action = "errno:EINVAL"
[[seccomp.rule]]
syscalls = ["chmod", "fchmod"]
args = ["arg1 & 04000"]
action = "errno:EPERM"
[[seccomp.rule]]
syscalls = ["fchmodat"]
args = ["arg2 > 0777"]
action = "errno:EPERM"
[[seccomp.rule]]
syscalls = ["prctl"]
args = ["arg0 == PR_SET_DUMPABLE", "arg1 == 0x100000000"]
action = "errno:EPERM"
[[seccomp.rule]]
syscalls = ["fcntl"]
args = ["arg1 == 1030", "arg2 > 0xffffffff"]
action = "errno:EBADF"
)";
    EXPECT_GE(check_high_bits(forms, false, nullptr), 7u);
    // The same forms in a default-deny policy, where they are allows.
    std::string deny =
        "[seccomp]\ndefault = \"errno:EPERM\"" + forms.substr(std::string("[seccomp]").size());
    for (size_t at = 0; (at = deny.find("action = \"errno:", at)) != std::string::npos;) {
        size_t end = deny.find('"', at + 10);
        deny.replace(at, end + 1 - at, "action = \"allow\"");
        at += 16;
    }
    EXPECT_GE(check_high_bits(deny, false, nullptr), 7u);
}

// What a condition on an int cannot mean is an error with the rule's position:
// arguments the call does not have, values the kernel can never see, conditions the
// narrowing makes always true.
TEST(SeccompWidths, ConditionsTheKernelCannotSeeAreErrors) {
    auto err = [](const std::string& rule) {
        auto p = policy::load_text("[seccomp]\n[[seccomp.rule]]\n" + rule, "t.toml");
        if (!p) return "policy: " + p.error().message();
        auto c = compile(p->seccomp);
        return c ? std::string("(no error)") : c.error().message();
    };
    auto rule = [](const std::string& call, const std::string& cond) {
        return "syscalls = ['" + call + "']\nargs = ['" + cond + "']\naction = 'errno:EPERM'\n";
    };
    std::string e = err(rule("socket", "arg3 == 1"));
    EXPECT_NE(e.find("socket takes 3 arguments: arg3 is not one of them"), std::string::npos) << e;
    e = err(rule("getpid", "arg0 == 1"));
    EXPECT_NE(e.find("getpid takes 0 arguments"), std::string::npos) << e;
    e = err(rule("ioctl", "arg1 == 0x100005412"));
    EXPECT_NE(e.find("t.toml:2:1"), std::string::npos) << e;
    EXPECT_NE(e.find("arg1 of ioctl is a 32-bit value"), std::string::npos) << e;
    EXPECT_NE(e.find("can never be true"), std::string::npos) << e;
    e = err(rule("socket", "arg0 != 0x100000000"));
    EXPECT_NE(e.find("always true"), std::string::npos) << e;
    e = err(rule("chmod", "arg1 & 0x10000"));
    EXPECT_NE(e.find("arg1 of chmod is a 16-bit value"), std::string::npos) << e;
    e = err(rule("socket", "arg0 & 0xffffffff00000000 == 0"));
    EXPECT_NE(e.find("always true"), std::string::npos) << e;
    e = err(rule("socket", "arg0 > 0xffffffff"));
    EXPECT_NE(e.find("can never be true"), std::string::npos) << e;
    // The bits of a mask above the width are simply left out, and a 64-bit argument
    // keeps its 64-bit comparison.
    EXPECT_EQ(err(rule("ioctl", "arg1 & 0xffffffffffffffff == 0x5412")), "(no error)");
    EXPECT_EQ(err(rule("ioctl", "arg2 == 0x100000000")), "(no error)");
    // Two ranges on ints multiply into too many comparisons.
    e =
        err("syscalls = ['kill']\nargs = ['arg0 > 0x10001', 'arg1 > 0x10001']\n"
            "action = 'errno:EPERM'\n");
    EXPECT_NE(e.find("comparisons for kill"), std::string::npos) << e;
}

TEST(SeccompBpf, TextAndJsonNameTheRules) {
    auto p = compiled("default");
    ASSERT_TRUE(p);
    std::string text = p->to_text();
    EXPECT_NE(text.find("i386 (int 0x80) and x32 calls: kill the process"), std::string::npos);
    EXPECT_NE(text.find("an int's low 32"), std::string::npos) << text;
    EXPECT_NE(text.find("execve sendmsg close write exit exit_group"), std::string::npos);
    EXPECT_NE(text.find("ioctl if arg1 & 0xffffffff == TIOCSTI -> errno:EPERM"), std::string::npos)
        << text;
    EXPECT_NE(text.find("(not on x86_64: umount)"), std::string::npos) << text;
    EXPECT_NE(text.find("BPF instructions"), std::string::npos);
    std::string json = to_json(*p);
    EXPECT_NE(json.find("\"ptrace\": {\n      \"nr\": 101,\n      \"action\": \"errno:EPERM\""),
              std::string::npos)
        << json.substr(0, 2000);
    EXPECT_NE(json.find("\"bpf_instructions\": " + std::to_string(p->bpf().size())),
              std::string::npos);
}

// The binary tree keeps the instructions run per call low: what the benchmark's
// argument-filtered ioctl and plain calls cost in the filter.
TEST(SeccompBpf, InstructionsRunPerCall) {
    for (const char* name : {"default", "strict"}) {
        auto p = compiled(name);
        ASSERT_TRUE(p);
        size_t read = 0, ioctl = 0, tiocsti = 0, openat = 0, unknown = 0;
        run(*p, X86_64, SYS_read, {}, &read);
        run(*p, X86_64, SYS_openat, {}, &openat);
        run(*p, X86_64, SYS_ioctl, {0, FIONREAD}, &ioctl);
        run(*p, X86_64, SYS_ioctl, {0, TIOCSTI}, &tiocsti);
        run(*p, X86_64, 999, {}, &unknown);
        std::printf("[ info ] %s: %zu BPF instructions; run per call: read %zu, openat %zu, "
                    "ioctl FIONREAD %zu, ioctl TIOCSTI %zu, nr 999 %zu\n",
                    name, p->bpf().size(), read, openat, ioctl, tiocsti, unknown);
        // A linear layout would run hundreds; the tree stays within a few dozen.
        EXPECT_LE(read, 24u) << name;
        EXPECT_LE(openat, 24u) << name;
        EXPECT_LE(ioctl, std::string(name) == "default" ? 32u : 160u) << name;
    }
}

TEST(SeccompBpf, NamesForTheLog) {
    EXPECT_EQ(syscall_name(X86_64, 257), "openat");
    EXPECT_EQ(syscall_name(I386, 310), "unshare");
    EXPECT_EQ(syscall_name(X86_64, 999), "syscall 999");
    EXPECT_EQ(arch_name(X86_64), "x86_64");
    EXPECT_EQ(arch_name(I386), "i386");
}

}  // namespace
}  // namespace agentjail::seccomp

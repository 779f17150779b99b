// SPDX-License-Identifier: Apache-2.0
// The seccomp rule compiler: the input is a policy's text (usually a [seccomp]
// section over a built-in policy). An accepted policy compiles to a program that
// runs (in the kernel's semantics: tests/support/bpf_run.hpp) without falling off
// its end, and for sampled calls the filter's answer is the one decide() implies:
// the supervisor reports what the kernel did. Then the kernel itself: a child loads
// the filter (it must accept it) and makes a few calls with no effect (getpid,
// getppid, getuid, getgid, gettid); what each returns, or the signal that ends the
// child, must be what decide() says (a call for the supervisor, with none
// listening here, returns ENOSYS).
#include "fuzz.hpp"

#include "bpf_run.hpp"
#include "policy/policy.hpp"
#include "seccomp/seccomp.hpp"

#include <linux/audit.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <string>

namespace {

// What the kernel answers for one harmless call under the filter: the call's result
// (a value, or -errno) written by a child, or 1000 + the signal that ended it.
long kernel_answer(const std::vector<sock_filter>& bpf, long nr) {
    int fds[2];
    if (::pipe(fds) != 0) return -100000;
    pid_t pid = ::fork();
    if (pid == 0) {
        ::close(fds[0]);
        sock_fprog prog{static_cast<unsigned short>(bpf.size()), const_cast<sock_filter*>(bpf.data())};
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(2);
        if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) ::_exit(3);
        long r = ::syscall(nr);
        long v = r < 0 ? -errno : 0;  // the value itself differs by process: 0 for success
        (void)!::write(fds[1], &v, sizeof v);
        ::_exit(0);
    }
    ::close(fds[1]);
    long v = -100000;
    // A signal of libFuzzer's (its timers) may interrupt the read: closing the pipe
    // then would end the child with SIGPIPE, which looked like the filter's answer
    // ("the kernel answered 1013", session 16).
    ssize_t n;
    do {
        n = ::read(fds[0], &v, sizeof v);
    } while (n < 0 && errno == EINTR);
    ::close(fds[0]);
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(st)) return 1000 + WTERMSIG(st);
    AJ_FUZZ_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);  // the kernel accepted the filter
    return n == static_cast<ssize_t>(sizeof v) ? v : -100000;
}

// What decide() implies the kernel answers for that call (the same encoding).
long expected_answer(const agentjail::seccomp::Program& p, long nr) {
    using agentjail::seccomp::ActionKind;
    std::uint64_t args[6] = {};
    agentjail::seccomp::Decision d = p.decide(AUDIT_ARCH_X86_64, static_cast<int>(nr), args);
    std::uint32_t ret = ajtest::implied(p, d);
    switch (ret & SECCOMP_RET_ACTION_FULL) {
    case SECCOMP_RET_ALLOW:
    case SECCOMP_RET_LOG: return 0;
    case SECCOMP_RET_ERRNO: return -static_cast<long>(ret & SECCOMP_RET_DATA);
    case SECCOMP_RET_USER_NOTIF: return -ENOSYS;
    case SECCOMP_RET_KILL_PROCESS:
    case SECCOMP_RET_KILL_THREAD:
    case SECCOMP_RET_TRAP: return 1000 + SIGSYS;
    default: return -100001;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace agentjail;
    if (size > 16 * 1024) return 0;
    auto pol = policy::load_text(std::string(ajfuzz::as_text(data, size)), "fuzz.toml");
    if (!pol) return 0;
    auto prog = seccomp::compile(pol->seccomp);
    if (!prog) {
        AJ_FUZZ_CHECK(!prog.error().message().empty());
        return 0;
    }
    if (!*prog) return 0;  // no [seccomp] section: no filter
    const seccomp::Program& p = **prog;
    AJ_FUZZ_CHECK(!p.bpf().empty() && p.bpf().size() <= BPF_MAXINSNS);
    // The call numbers every rule names plus a sweep, with arguments from the input.
    std::uint64_t seed = 1469598103934665603ull;
    for (size_t i = 0; i < size; ++i) seed = (seed ^ data[i]) * 1099511628211ull;
    for (std::uint32_t arch : {std::uint32_t{AUDIT_ARCH_X86_64}, std::uint32_t{AUDIT_ARCH_I386}}) {
        for (int nr = 0; nr <= 460; ++nr) {
            seccomp_data d{};
            d.arch = arch;
            d.nr = nr;
            d.instruction_pointer = 0x401000;
            for (auto& a : d.args) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                // Small values (flags, fds) as often as arbitrary ones.
                a = (seed >> 63) != 0 ? (seed >> 33) & 0xff : seed;
            }
            std::uint32_t bpf = ajtest::run_bpf(p.bpf(), d);
            AJ_FUZZ_CHECK(bpf != ajtest::bad_program);
            std::uint64_t args[6];
            for (int i = 0; i < 6; ++i) args[i] = d.args[i];
            seccomp::Decision dec = p.decide(arch, nr, args);
            AJ_FUZZ_CHECK(ajtest::implied(p, dec) == bpf);
        }
    }
    for (long nr : {long{SYS_getpid}, long{SYS_getppid}, long{SYS_getuid}, long{SYS_getgid}, long{SYS_gettid}}) {
        long want = expected_answer(p, nr);
        long got = kernel_answer(p.bpf(), nr);
        if (got != want) std::fprintf(stderr, "syscall %ld: the kernel answered %ld, decide() says %ld\n", nr, got, want);
        if (std::getenv("AJ_FUZZ_VERBOSE")) std::fprintf(stderr, "syscall %ld: %ld\n", nr, got);
        AJ_FUZZ_CHECK(got == want);
    }
    return 0;
}

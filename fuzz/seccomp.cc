// SPDX-License-Identifier: Apache-2.0
// The seccomp rule compiler: the input is a policy's text (usually a [seccomp]
// section over a built-in policy). An accepted policy compiles to a program that
// runs (in the kernel's semantics: tests/support/bpf_run.hpp) without falling off
// its end, and for sampled calls the filter's answer is the one decide() implies:
// the supervisor reports what the kernel did.
#include "fuzz.hpp"

#include "bpf_run.hpp"
#include "policy/policy.hpp"
#include "seccomp/seccomp.hpp"

#include <linux/audit.h>

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace agentjail;
    if (size > 16 * 1024) return 0;
    auto pol = policy::load_text(std::string(ajfuzz::as_text(data, size)), "fuzz.toml");
    if (!pol) return 0;
    auto prog = seccomp::compile(*pol);
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
    return 0;
}

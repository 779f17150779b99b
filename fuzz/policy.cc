// SPDX-License-Identifier: Apache-2.0
// The policy loader and merger: any text as one policy file (its extends chain
// resolved through the built-ins, or files next to it), then the checks that run
// on a merged policy and the seccomp compiler. Invariants: a refusal says where (a
// policy file's name), never a crash; an accepted policy validates and compiles or
// says why not.
#include "fuzz.hpp"

#include "policy/policy.hpp"
#include "seccomp/seccomp.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 64 * 1024) return 0;
    std::string text(ajfuzz::as_text(data, size));
    auto pol = agentjail::policy::load_text(text, "fuzz.toml");
    if (!pol) {
        const std::string& m = pol.error().message();
        AJ_FUZZ_CHECK(!m.empty());
        // It says where: this file or the layer of its extends chain at fault.
        AJ_FUZZ_CHECK(m.find(".toml") != std::string::npos);
        return 0;
    }
    auto ok = agentjail::policy::validate(*pol);
    if (!ok) AJ_FUZZ_CHECK(!ok.error().message().empty());
    auto prog = agentjail::seccomp::compile(pol->seccomp);
    if (!prog) AJ_FUZZ_CHECK(!prog.error().message().empty());
    return 0;
}

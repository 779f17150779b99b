// SPDX-License-Identifier: Apache-2.0
// Placeholder until the [seccomp] compiler lands: no policy has a filter yet.
#include "seccomp/seccomp.hpp"

#include <linux/audit.h>
#include <seccomp.h>

#include <cstdlib>

namespace agentjail::seccomp {

Result<std::shared_ptr<const Program>> compile(const policy::Policy&) {
    return std::shared_ptr<const Program>();
}

std::string arch_name(std::uint32_t arch) {
    switch (arch) {
        case AUDIT_ARCH_X86_64: return "x86_64";
        case AUDIT_ARCH_I386: return "i386";
        default: return "arch " + std::to_string(arch);
    }
}

std::string syscall_name(std::uint32_t arch, int nr) {
    char* name = seccomp_syscall_resolve_num_arch(arch, nr);
    if (name == nullptr) return "syscall " + std::to_string(nr);
    std::string s = name;
    std::free(name);
    return s;
}

}  // namespace agentjail::seccomp

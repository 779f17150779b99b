// SPDX-License-Identifier: Apache-2.0
// x86_64 syscall names and numbers: libseccomp's table, completed with the calls the
// kernel gained after the libseccomp release we build with, so a policy can name
// them and a sweep of new numbers is answered by the rules, not by a blind spot.
#include "seccomp/internal.hpp"

#include <seccomp.h>

#include <cstdlib>
#include <utility>

namespace agentjail::seccomp::detail {
namespace {

// From the kernel's arch/x86/entry/syscalls/syscall_64.tbl (numbers are ABI).
// uretprobe (335) and uprobe (336) are left out on purpose: the kernel runs them
// without consulting seccomp at all (they only work from a uprobe trampoline), so a
// rule naming them would promise something the filter cannot keep.
constexpr std::pair<std::string_view, int> newer[] = {
    {"statmount", 457},     {"listmount", 458},     {"lsm_get_self_attr", 459},
    {"lsm_set_self_attr", 460}, {"lsm_list_modules", 461}, {"mseal", 462},
    {"setxattrat", 463},    {"getxattrat", 464},    {"listxattrat", 465},
    {"removexattrat", 466}, {"open_tree_attr", 467}, {"file_getattr", 468},
    {"file_setattr", 469},
};

}  // namespace

int native_nr(std::string_view name) {
    std::string n(name);
    int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, n.c_str());
    if (nr != __NR_SCMP_ERROR) return nr;
    for (const auto& [k, v] : newer)
        if (k == name) return v;
    return __NR_SCMP_ERROR;
}

std::string native_name(int nr) {
    if (char* s = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr)) {
        std::string out = s;
        std::free(s);
        return out;
    }
    for (const auto& [k, v] : newer)
        if (v == nr) return std::string(k);
    return {};
}

}  // namespace agentjail::seccomp::detail

// SPDX-License-Identifier: Apache-2.0
// Landlock (Linux 5.13+) as raw system calls and the rights of each ABI. The build's
// <linux/landlock.h> may be older than the kernel it runs on (Debian 12's knows ABI
// 3), so the rights and the ruleset's layout are spelled here, as the kernel's UAPI
// has them. Everything here is safe between clone and execve: no allocation, no
// lock, only system calls.
#pragma once

#include "sys/syscalls.hpp"

#include <cstdint>

namespace agentjail::sys::landlock {

// Filesystem rights (LANDLOCK_ACCESS_FS_*), by the ABI that added them.
inline constexpr std::uint64_t kExecute = 1ULL << 0;     // 1
inline constexpr std::uint64_t kWriteFile = 1ULL << 1;   // 1
inline constexpr std::uint64_t kReadFile = 1ULL << 2;    // 1
inline constexpr std::uint64_t kReadDir = 1ULL << 3;     // 1
inline constexpr std::uint64_t kRemoveDir = 1ULL << 4;   // 1
inline constexpr std::uint64_t kRemoveFile = 1ULL << 5;  // 1
inline constexpr std::uint64_t kMakeChar = 1ULL << 6;    // 1
inline constexpr std::uint64_t kMakeDir = 1ULL << 7;     // 1
inline constexpr std::uint64_t kMakeReg = 1ULL << 8;     // 1
inline constexpr std::uint64_t kMakeSock = 1ULL << 9;    // 1
inline constexpr std::uint64_t kMakeFifo = 1ULL << 10;   // 1
inline constexpr std::uint64_t kMakeBlock = 1ULL << 11;  // 1
inline constexpr std::uint64_t kMakeSym = 1ULL << 12;    // 1
inline constexpr std::uint64_t kRefer = 1ULL << 13;      // 2: links and renames across directories
inline constexpr std::uint64_t kTruncate = 1ULL << 14;   // 3
inline constexpr std::uint64_t kIoctlDev = 1ULL << 15;   // 5: ioctl on a device opened from here

// Scopes (LANDLOCK_SCOPE_*, ABI 6): what a process of the domain may not reach
// outside it.
inline constexpr std::uint64_t kScopeAbstractUnix = 1ULL << 0;
inline constexpr std::uint64_t kScopeSignal = 1ULL << 1;

// What reading a tree takes, and what a rule on a file (not a directory) may grant.
inline constexpr std::uint64_t kRead = kExecute | kReadFile | kReadDir;
inline constexpr std::uint64_t kFileOnly = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;

// The filesystem rights an ABI knows (0 for none).
constexpr std::uint64_t fs_rights(long abi) {
    if (abi < 1) return 0;
    std::uint64_t r = (1ULL << 13) - 1;  // ABI 1: execute .. make_sym
    if (abi >= 2) r |= kRefer;
    if (abi >= 3) r |= kTruncate;
    if (abi >= 5) r |= kIoctlDev;
    return r;
}
constexpr std::uint64_t scopes(long abi) { return abi >= 6 ? kScopeAbstractUnix | kScopeSignal : 0; }

// struct landlock_ruleset_attr as of ABI 6; an older kernel takes it whole as long as
// the fields it does not know are zero (handled_access_net stays 0: inside its own
// network namespace the sandbox needs no TCP rule, docs/landlock.md).
struct RulesetAttr {
    std::uint64_t handled_access_fs;
    std::uint64_t handled_access_net;
    std::uint64_t scoped;
};

// struct landlock_path_beneath_attr (packed in the UAPI).
struct __attribute__((packed)) PathBeneath {
    std::uint64_t allowed_access;
    std::int32_t parent_fd;
};

inline constexpr int kRulePathBeneath = 1;  // LANDLOCK_RULE_PATH_BENEATH

#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

// Each returns the result or -errno (sys::ret). The ABI itself: sys::landlock_abi().
inline int create_ruleset(const RulesetAttr& attr) {
    return static_cast<int>(ret(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0U)));
}
inline int add_path_rule(int ruleset, int parent_fd, std::uint64_t access) {
    PathBeneath pb{access, parent_fd};
    return static_cast<int>(ret(::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &pb, 0U)));
}
// Needs no_new_privs (or CAP_SYS_ADMIN).
inline int restrict_self(int ruleset) {
    return static_cast<int>(ret(::syscall(SYS_landlock_restrict_self, ruleset, 0U)));
}

}  // namespace agentjail::sys::landlock

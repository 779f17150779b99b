// SPDX-License-Identifier: Apache-2.0
// Landlock (Linux 5.13+) as raw system calls and the rights of each ABI. The build's
// <linux/landlock.h> may be older than the kernel it runs on (Debian 12's knows ABI
// 3), so the rights and the ruleset's layout are spelled here, as the kernel's UAPI
// has them. Everything here is safe between clone and execve: no allocation, no
// lock, only system calls.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
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

// Network rights (LANDLOCK_ACCESS_NET_*, ABI 4): TCP bind and connect by port.
inline constexpr std::uint64_t kBindTcp = 1ULL << 0;
inline constexpr std::uint64_t kConnectTcp = 1ULL << 1;

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
constexpr std::uint64_t net_rights(long abi) { return abi >= 4 ? kBindTcp | kConnectTcp : 0; }
constexpr std::uint64_t scopes(long abi) { return abi >= 6 ? kScopeAbstractUnix | kScopeSignal : 0; }

// struct landlock_ruleset_attr as of ABI 6; an older kernel takes it whole as long as
// the fields it does not know are zero.
struct RulesetAttr {
    std::uint64_t handled_access_fs;
    std::uint64_t handled_access_net;
    std::uint64_t scoped;
};

// struct landlock_path_beneath_attr and landlock_net_port_attr (packed in the UAPI).
struct __attribute__((packed)) PathBeneath {
    std::uint64_t allowed_access;
    std::int32_t parent_fd;
};
struct NetPort {
    std::uint64_t allowed_access;
    std::uint64_t port;
};

inline constexpr int kRulePathBeneath = 1;  // LANDLOCK_RULE_PATH_BENEATH
inline constexpr int kRuleNetPort = 2;      // LANDLOCK_RULE_NET_PORT

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

// Each returns the result or -errno.
inline int create_ruleset(const RulesetAttr& attr) {
    long r = ::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0U);
    return r < 0 ? -errno : static_cast<int>(r);
}
inline int add_path_rule(int ruleset, int parent_fd, std::uint64_t access) {
    PathBeneath pb{access, parent_fd};
    return ::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &pb, 0U) < 0 ? -errno : 0;
}
inline int add_port_rule(int ruleset, std::uint16_t port, std::uint64_t access) {
    NetPort np{access, port};
    return ::syscall(SYS_landlock_add_rule, ruleset, kRuleNetPort, &np, 0U) < 0 ? -errno : 0;
}
// Needs no_new_privs (or CAP_SYS_ADMIN).
inline int restrict_self(int ruleset) {
    return ::syscall(SYS_landlock_restrict_self, ruleset, 0U) < 0 ? -errno : 0;
}

}  // namespace agentjail::sys::landlock

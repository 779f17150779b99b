// SPDX-License-Identifier: Apache-2.0
// The thin system-call layer: raw wrappers that return -errno (never set errno),
// for calls glibc 2.36 does not wrap, plus the constants its headers lack.
#pragma once

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "base/clone_flags.hpp"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef RESOLVE_NO_XDEV
#define RESOLVE_NO_XDEV 0x01
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define RESOLVE_BENEATH 0x08
#define RESOLVE_IN_ROOT 0x10
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#define SYS_fsconfig 431
#define SYS_fsmount 432
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL  // Linux 6.9: a pidfd on one thread
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#define SYS_fsconfig 431
#define SYS_fsmount 432
#endif
// FSOPEN_CLOEXEC, FSMOUNT_CLOEXEC and the FSCONFIG_* commands: <sys/mount.h>.

namespace agentjail::sys {

struct CloneArgs {
    std::uint64_t flags;
    std::uint64_t pidfd;
    std::uint64_t child_tid;
    std::uint64_t parent_tid;
    std::uint64_t exit_signal;
    std::uint64_t stack;
    std::uint64_t stack_size;
    std::uint64_t tls;
    std::uint64_t set_tid;
    std::uint64_t set_tid_size;
    std::uint64_t cgroup;
};

struct OpenHow {
    std::uint64_t flags;
    std::uint64_t mode;
    std::uint64_t resolve;
};

struct MountAttr {
    std::uint64_t attr_set;
    std::uint64_t attr_clr;
    std::uint64_t propagation;
    std::uint64_t userns_fd;
};

inline long ret(long r) { return r < 0 ? -errno : r; }

// Fork-like clone3 (no stack given: the child continues on a copy of ours).
inline long clone3(CloneArgs* args) { return ret(::syscall(SYS_clone3, args, sizeof(*args))); }

// Fork-like clone without atfork handlers: safe in a child of a multi-threaded host.
inline long raw_fork() { return ret(::syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0)); }

inline int openat2(int dirfd, const char* path, std::uint64_t flags, std::uint64_t resolve) {
    OpenHow how{flags, 0, resolve};
    return static_cast<int>(ret(::syscall(SYS_openat2, dirfd, path, &how, sizeof how)));
}

inline int open_tree(int dirfd, const char* path, unsigned flags) {
    return static_cast<int>(ret(::syscall(SYS_open_tree, dirfd, path, flags)));
}

inline int move_mount(int from_dirfd, const char* from, int to_dirfd, const char* to, unsigned flags) {
    return static_cast<int>(ret(::syscall(SYS_move_mount, from_dirfd, from, to_dirfd, to, flags)));
}

inline int mount_setattr(int dirfd, const char* path, unsigned flags, MountAttr* attr) {
    return static_cast<int>(ret(::syscall(SYS_mount_setattr, dirfd, path, flags, attr, sizeof *attr)));
}

// The new mount API (Linux 5.2), for filesystems whose options are paths that must
// name exactly what was opened (overlayfs layers), and for the guard watch's tmpfs
// masks made without a path to mount them on: constants from <sys/mount.h>.
inline int fsopen(const char* fs_name, unsigned flags) {
    return static_cast<int>(ret(::syscall(SYS_fsopen, fs_name, flags)));
}

inline int fsconfig(int fs_fd, unsigned cmd, const char* key, const void* value, int aux) {
    return static_cast<int>(ret(::syscall(SYS_fsconfig, fs_fd, cmd, key, value, aux)));
}

inline int fsmount(int fs_fd, unsigned flags, unsigned attr) {
    return static_cast<int>(ret(::syscall(SYS_fsmount, fs_fd, flags, attr)));
}

inline int close_range(unsigned first, unsigned last, unsigned flags) {
    return static_cast<int>(ret(::syscall(SYS_close_range, first, last, flags)));
}

inline int pidfd_send_signal(int pidfd, int sig) {
    return static_cast<int>(ret(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0)));
}

inline int pidfd_open(pid_t pid, unsigned flags = 0) {
    return static_cast<int>(ret(::syscall(SYS_pidfd_open, pid, flags)));
}

// Another process's descriptor `fd` as one of ours (Linux 5.6): the same open file.
// The running kernel's Landlock ABI (landlock_create_ruleset's VERSION query), or
// -errno: -ENOSYS not built in, -EOPNOTSUPP built in but off.
inline long landlock_abi() { return ret(::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U << 0)); }

inline int pidfd_getfd(int pidfd, int fd) {
    return static_cast<int>(ret(::syscall(SYS_pidfd_getfd, pidfd, fd, 0)));
}

// Empties the calling thread's effective, permitted and inheritable sets with the
// raw system call: no allocation and no lock (libcap's cap_set_proc takes both),
// so it is safe between clone and execve.
inline int capset_empty() {
    __user_cap_header_struct head{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    return static_cast<int>(ret(::syscall(SYS_capset, &head, data)));
}

// The raw id calls: glibc's wrappers broadcast the change to every thread it knows
// of (nptl's setxid), and after clone the child only has the parent's stale list.
// These change the calling thread alone, which in a cloned child is the process.
inline int setgroups_none() { return static_cast<int>(ret(::syscall(SYS_setgroups, 0, nullptr))); }
inline int setresgid(gid_t g) { return static_cast<int>(ret(::syscall(SYS_setresgid, g, g, g))); }
inline int setresuid(uid_t u) { return static_cast<int>(ret(::syscall(SYS_setresuid, u, u, u))); }

inline int pivot_root(const char* new_root, const char* put_old) {
    return static_cast<int>(ret(::syscall(SYS_pivot_root, new_root, put_old)));
}

}  // namespace agentjail::sys

// SPDX-License-Identifier: Apache-2.0
// x86_64 syscall names and numbers: libseccomp's table, completed with the calls the
// kernel gained after the libseccomp release we build with, so a policy can name
// them and a sweep of new numbers is answered by the rules, not by a blind spot.
#include "seccomp/internal.hpp"

#include <seccomp.h>

#include <cstdlib>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

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

// The parameters of every x86_64 call, one letter each: 'l' 64 bits (long, size_t,
// loff_t, aio_context_t), 'p' a pointer (64 bits), 'i' 32 bits (int, unsigned,
// pid_t, uid_t, gid_t, key_t, clockid_t, timer_t, mqd_t, rwf_t, u32), 'h' 16 bits
// (umode_t). Taken from the kernel's include/linux/syscalls.h and the x86 entry
// points; an fd declared unsigned long (readv, writev, preadv*, mmap's) is 'i',
// like pid for ptrace, because the kernel narrows it to an int before any use.
// Calls the kernel no longer implements (create_module, tuxcall...) take nothing.
// clang-format off
constexpr std::pair<std::string_view, std::string_view> kParams[] = {
    {"read", "ipl"}, {"write", "ipl"}, {"open", "pih"}, {"close", "i"}, {"stat", "pp"},
    {"fstat", "ip"}, {"lstat", "pp"}, {"poll", "pii"}, {"lseek", "ili"}, {"mmap", "llllil"},
    {"mprotect", "lll"}, {"munmap", "ll"}, {"brk", "l"}, {"rt_sigaction", "ippl"},
    {"rt_sigprocmask", "ippl"}, {"rt_sigreturn", ""}, {"ioctl", "iil"}, {"pread64", "ipll"},
    {"pwrite64", "ipll"}, {"readv", "ipl"}, {"writev", "ipl"}, {"access", "pi"}, {"pipe", "p"},
    {"select", "ipppp"}, {"sched_yield", ""}, {"mremap", "lllll"}, {"msync", "lli"},
    {"mincore", "llp"}, {"madvise", "lli"}, {"shmget", "ili"}, {"shmat", "ipi"},
    {"shmctl", "iip"}, {"dup", "i"}, {"dup2", "ii"}, {"pause", ""}, {"nanosleep", "pp"},
    {"getitimer", "ip"}, {"alarm", "i"}, {"setitimer", "ipp"}, {"getpid", ""},
    {"sendfile", "iipl"}, {"socket", "iii"}, {"connect", "ipi"}, {"accept", "ipp"},
    {"sendto", "iplipi"}, {"recvfrom", "iplipp"}, {"sendmsg", "ipi"}, {"recvmsg", "ipi"},
    {"shutdown", "ii"}, {"bind", "ipi"}, {"listen", "ii"}, {"getsockname", "ipp"},
    {"getpeername", "ipp"}, {"socketpair", "iiip"}, {"setsockopt", "iiipi"},
    {"getsockopt", "iiipp"}, {"clone", "llppl"}, {"fork", ""}, {"vfork", ""}, {"execve", "ppp"},
    {"exit", "i"}, {"wait4", "ipip"}, {"kill", "ii"}, {"uname", "p"}, {"semget", "iii"},
    {"semop", "ipi"}, {"semctl", "iiil"}, {"shmdt", "p"}, {"msgget", "ii"}, {"msgsnd", "ipli"},
    {"msgrcv", "iplli"}, {"msgctl", "iip"}, {"fcntl", "iil"}, {"flock", "ii"}, {"fsync", "i"},
    {"fdatasync", "i"}, {"truncate", "pl"}, {"ftruncate", "il"}, {"getdents", "ipi"},
    {"getcwd", "pl"}, {"chdir", "p"}, {"fchdir", "i"}, {"rename", "pp"}, {"mkdir", "ph"},
    {"rmdir", "p"}, {"creat", "ph"}, {"link", "pp"}, {"unlink", "p"}, {"symlink", "pp"},
    {"readlink", "ppi"}, {"chmod", "ph"}, {"fchmod", "ih"}, {"chown", "pii"}, {"fchown", "iii"},
    {"lchown", "pii"}, {"umask", "i"}, {"gettimeofday", "pp"}, {"getrlimit", "ip"},
    {"getrusage", "ip"}, {"sysinfo", "p"}, {"times", "p"}, {"ptrace", "lill"}, {"getuid", ""},
    {"syslog", "ipi"}, {"getgid", ""}, {"setuid", "i"}, {"setgid", "i"}, {"geteuid", ""},
    {"getegid", ""}, {"setpgid", "ii"}, {"getppid", ""}, {"getpgrp", ""}, {"setsid", ""},
    {"setreuid", "ii"}, {"setregid", "ii"}, {"getgroups", "ip"}, {"setgroups", "ip"},
    {"setresuid", "iii"}, {"getresuid", "ppp"}, {"setresgid", "iii"}, {"getresgid", "ppp"},
    {"getpgid", "i"}, {"setfsuid", "i"}, {"setfsgid", "i"}, {"getsid", "i"}, {"capget", "pp"},
    {"capset", "pp"}, {"rt_sigpending", "pl"}, {"rt_sigtimedwait", "pppl"},
    {"rt_sigqueueinfo", "iip"}, {"rt_sigsuspend", "pl"}, {"sigaltstack", "pp"}, {"utime", "pp"},
    {"mknod", "phi"}, {"uselib", "p"}, {"personality", "i"}, {"ustat", "ip"}, {"statfs", "pp"},
    {"fstatfs", "ip"}, {"sysfs", "ill"}, {"getpriority", "ii"}, {"setpriority", "iii"},
    {"sched_setparam", "ip"}, {"sched_getparam", "ip"}, {"sched_setscheduler", "iip"},
    {"sched_getscheduler", "i"}, {"sched_get_priority_max", "i"}, {"sched_get_priority_min", "i"},
    {"sched_rr_get_interval", "ip"}, {"mlock", "ll"}, {"munlock", "ll"}, {"mlockall", "i"},
    {"munlockall", ""}, {"vhangup", ""}, {"modify_ldt", "ipl"}, {"pivot_root", "pp"},
    {"_sysctl", "p"}, {"prctl", "illll"}, {"arch_prctl", "il"}, {"adjtimex", "p"},
    {"setrlimit", "ip"}, {"chroot", "p"}, {"sync", ""}, {"acct", "p"}, {"settimeofday", "pp"},
    {"mount", "ppplp"}, {"umount2", "pi"}, {"swapon", "pi"}, {"swapoff", "p"}, {"reboot", "iiip"},
    {"sethostname", "pi"}, {"setdomainname", "pi"}, {"iopl", "i"}, {"ioperm", "lli"},
    {"create_module", ""}, {"init_module", "plp"}, {"delete_module", "pi"},
    {"get_kernel_syms", ""}, {"query_module", ""}, {"quotactl", "ipip"}, {"nfsservctl", ""},
    {"getpmsg", ""}, {"putpmsg", ""}, {"afs_syscall", ""}, {"tuxcall", ""}, {"security", ""},
    {"gettid", ""}, {"readahead", "ill"}, {"setxattr", "pppli"}, {"lsetxattr", "pppli"},
    {"fsetxattr", "ippli"}, {"getxattr", "pppl"}, {"lgetxattr", "pppl"}, {"fgetxattr", "ippl"},
    {"listxattr", "ppl"}, {"llistxattr", "ppl"}, {"flistxattr", "ipl"}, {"removexattr", "pp"},
    {"lremovexattr", "pp"}, {"fremovexattr", "ip"}, {"tkill", "ii"}, {"time", "p"},
    {"futex", "piippi"}, {"sched_setaffinity", "iip"}, {"sched_getaffinity", "iip"},
    {"set_thread_area", "p"}, {"io_setup", "ip"}, {"io_destroy", "l"}, {"io_getevents", "lllpp"},
    {"io_submit", "llp"}, {"io_cancel", "lpp"}, {"get_thread_area", "p"},
    {"lookup_dcookie", "lpl"}, {"epoll_create", "i"}, {"epoll_ctl_old", ""},
    {"epoll_wait_old", ""}, {"remap_file_pages", "lllll"}, {"getdents64", "ipi"},
    {"set_tid_address", "p"}, {"restart_syscall", ""}, {"semtimedop", "ipip"},
    {"fadvise64", "illi"}, {"timer_create", "ipp"}, {"timer_settime", "iipp"},
    {"timer_gettime", "ip"}, {"timer_getoverrun", "i"}, {"timer_delete", "i"},
    {"clock_settime", "ip"}, {"clock_gettime", "ip"}, {"clock_getres", "ip"},
    {"clock_nanosleep", "iipp"}, {"exit_group", "i"}, {"epoll_wait", "ipii"},
    {"epoll_ctl", "iiip"}, {"tgkill", "iii"}, {"utimes", "pp"}, {"vserver", ""},
    {"mbind", "lllpli"}, {"set_mempolicy", "ipl"}, {"get_mempolicy", "pplll"},
    {"mq_open", "pihp"}, {"mq_unlink", "p"}, {"mq_timedsend", "iplip"},
    {"mq_timedreceive", "iplpp"}, {"mq_notify", "ip"}, {"mq_getsetattr", "ipp"},
    {"kexec_load", "llpl"}, {"waitid", "iipip"}, {"add_key", "pppli"}, {"request_key", "pppi"},
    {"keyctl", "illll"}, {"ioprio_set", "iii"}, {"ioprio_get", "ii"}, {"inotify_init", ""},
    {"inotify_add_watch", "ipi"}, {"inotify_rm_watch", "ii"}, {"migrate_pages", "ilpp"},
    {"openat", "ipih"}, {"mkdirat", "iph"}, {"mknodat", "iphi"}, {"fchownat", "ipiii"},
    {"futimesat", "ipp"}, {"newfstatat", "ippi"}, {"unlinkat", "ipi"}, {"renameat", "ipip"},
    {"linkat", "ipipi"}, {"symlinkat", "pip"}, {"readlinkat", "ippi"}, {"fchmodat", "iph"},
    {"faccessat", "ipi"}, {"pselect6", "ippppp"}, {"ppoll", "pippl"}, {"unshare", "l"},
    {"set_robust_list", "pl"}, {"get_robust_list", "ipp"}, {"splice", "ipipli"}, {"tee", "iili"},
    {"sync_file_range", "illi"}, {"vmsplice", "ipli"}, {"move_pages", "ilpppi"},
    {"utimensat", "ippi"}, {"epoll_pwait", "ipiipl"}, {"signalfd", "ipl"},
    {"timerfd_create", "ii"}, {"eventfd", "i"}, {"fallocate", "iill"},
    {"timerfd_settime", "iipp"}, {"timerfd_gettime", "ip"}, {"accept4", "ippi"},
    {"signalfd4", "ipli"}, {"eventfd2", "ii"}, {"epoll_create1", "i"}, {"dup3", "iii"},
    {"pipe2", "pi"}, {"inotify_init1", "i"}, {"preadv", "iplll"}, {"pwritev", "iplll"},
    {"rt_tgsigqueueinfo", "iiip"}, {"perf_event_open", "piiil"}, {"recvmmsg", "ipiip"},
    {"fanotify_init", "ii"}, {"fanotify_mark", "iilip"}, {"prlimit64", "iipp"},
    {"name_to_handle_at", "ipppi"}, {"open_by_handle_at", "ipi"}, {"clock_adjtime", "ip"},
    {"syncfs", "i"}, {"sendmmsg", "ipii"}, {"setns", "ii"}, {"getcpu", "ppp"},
    {"process_vm_readv", "iplpll"}, {"process_vm_writev", "iplpll"}, {"kcmp", "iiill"},
    {"finit_module", "ipi"}, {"sched_setattr", "ipi"}, {"sched_getattr", "ipii"},
    {"renameat2", "ipipi"}, {"seccomp", "iip"}, {"getrandom", "pli"}, {"memfd_create", "pi"},
    {"kexec_file_load", "iilpl"}, {"bpf", "ipi"}, {"execveat", "ipppi"}, {"userfaultfd", "i"},
    {"membarrier", "iii"}, {"mlock2", "lli"}, {"copy_file_range", "ipipli"},
    {"preadv2", "ipllli"}, {"pwritev2", "ipllli"}, {"pkey_mprotect", "llli"},
    {"pkey_alloc", "ll"}, {"pkey_free", "i"}, {"statx", "ipiip"}, {"io_pgetevents", "lllppp"},
    {"rseq", "piii"}, {"pidfd_send_signal", "iipi"}, {"io_uring_setup", "ip"},
    {"io_uring_enter", "iiiipl"}, {"io_uring_register", "iipi"}, {"open_tree", "ipi"},
    {"move_mount", "ipipi"}, {"fsopen", "pi"}, {"fsconfig", "iippi"}, {"fsmount", "iii"},
    {"fspick", "ipi"}, {"pidfd_open", "ii"}, {"clone3", "pl"}, {"close_range", "iii"},
    {"openat2", "ippl"}, {"pidfd_getfd", "iii"}, {"faccessat2", "ipii"},
    {"process_madvise", "iplii"}, {"epoll_pwait2", "ipippl"}, {"mount_setattr", "ipipl"},
    {"quotactl_fd", "iiip"}, {"landlock_create_ruleset", "pli"}, {"landlock_add_rule", "iipi"},
    {"landlock_restrict_self", "ii"}, {"memfd_secret", "i"}, {"process_mrelease", "ii"},
    {"futex_waitv", "piipi"}, {"set_mempolicy_home_node", "llll"}, {"cachestat", "ippi"},
    {"fchmodat2", "iphi"}, {"map_shadow_stack", "lli"}, {"futex_wake", "plii"},
    {"futex_wait", "pllipi"}, {"futex_requeue", "piii"}, {"statmount", "ppli"},
    {"listmount", "ppli"}, {"lsm_get_self_attr", "ippi"}, {"lsm_set_self_attr", "ipii"},
    {"lsm_list_modules", "ppi"}, {"mseal", "lll"}, {"setxattrat", "ipippl"},
    {"getxattrat", "ipippl"}, {"listxattrat", "ipipl"}, {"removexattrat", "ipip"},
    {"open_tree_attr", "ipipl"}, {"file_getattr", "ippli"}, {"file_setattr", "ippli"},
};
// clang-format on

}  // namespace

std::optional<ArgWidths> arg_widths(std::string_view name) {
    for (const auto& [n, t] : kParams) {
        if (n != name) continue;
        ArgWidths w;
        w.count = static_cast<unsigned>(t.size());
        for (size_t i = 0; i < t.size() && i < 6; ++i)
            w.bits[i] = t[i] == 'i' ? 32 : t[i] == 'h' ? 16 : 64;
        return w;
    }
    return std::nullopt;
}

std::vector<std::string_view> arg_width_names() {
    std::vector<std::string_view> v;
    for (const auto& [n, t] : kParams) v.push_back(n);
    return v;
}

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

// SPDX-License-Identifier: Apache-2.0
// The @groups a rule may name, modelled on systemd's SystemCallFilter sets; each is
// documented in docs/seccomp.md. Members x86_64 lacks are listed for completeness
// and skipped (explain says so).
#include "seccomp/internal.hpp"

namespace agentjail::seccomp::detail {

const std::vector<Group>& groups() {
    static const std::vector<Group> all = {
        {"@mount", "mounting, unmounting, changing the root, and the fd-based mount API",
         {"mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen",
          "fsconfig", "fsmount", "fspick", "mount_setattr", "open_tree_attr"}},
        {"@namespaces", "entering or creating namespaces (clone and clone3 take flags: see docs)",
         {"unshare", "setns"}},
        {"@debug", "tracing and reading other processes' memory, performance counters",
         {"ptrace", "process_vm_readv", "process_vm_writev", "perf_event_open", "pidfd_getfd"}},
        {"@module", "loading and unloading kernel modules",
         {"init_module", "finit_module", "delete_module", "create_module", "query_module",
          "get_kernel_syms"}},
        {"@reboot", "rebooting and loading a new kernel",
         {"reboot", "kexec_load", "kexec_file_load"}},
        {"@swap", "enabling and disabling swap", {"swapon", "swapoff"}},
        {"@raw-io", "raw I/O port and PCI configuration access",
         {"ioperm", "iopl", "pciconfig_read", "pciconfig_write", "pciconfig_iobase"}},
        {"@obsolete", "calls no current program needs (unimplemented or long superseded)",
         {"_sysctl", "afs_syscall", "bdflush", "break", "create_module", "ftime",
          "get_kernel_syms", "getpmsg", "gtty", "idle", "lock", "mpx", "prof", "profil",
          "putpmsg", "query_module", "security", "sgetmask", "ssetmask", "stty", "sysfs",
          "tuxcall", "ulimit", "uselib", "ustat", "vserver"}},
        {"@keyring", "the kernel keyrings", {"add_key", "keyctl", "request_key"}},
        {"@io-uring", "io_uring (its operations bypass the per-call filter)",
         {"io_uring_setup", "io_uring_enter", "io_uring_register"}},
        {"@bpf", "loading eBPF programs and maps", {"bpf"}},
        {"@clock", "setting the system clock",
         {"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime"}},
        {"@privileged", "host administration: accounting, quotas, kernel log, handles",
         {"acct", "quotactl", "quotactl_fd", "lookup_dcookie", "nfsservctl", "vhangup",
          "syslog", "open_by_handle_at", "name_to_handle_at"}},
        {"@cpu-emulation", "changing the local descriptor table and vm86 mode",
         {"modify_ldt", "vm86", "vm86old"}},
        {"@numa", "NUMA memory placement",
         {"mbind", "set_mempolicy", "set_mempolicy_home_node",
          "migrate_pages", "move_pages"}},
        {"@userfaultfd", "user-space page fault handling (a classic exploit primitive)",
         {"userfaultfd"}},
        {"@fanotify", "filesystem-wide event monitoring", {"fanotify_init", "fanotify_mark"}},
    };
    return all;
}

const Group* find_group(std::string_view name) {
    for (const auto& g : groups())
        if (g.name == name) return &g;
    return nullptr;
}

}  // namespace agentjail::seccomp::detail

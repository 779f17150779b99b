// SPDX-License-Identifier: Apache-2.0
// Writes to stdout a compiled seccomp program (BPF) for `bwrap --seccomp FD`, built
// with libseccomp to match agentjail's default policy in shape: default allow, the
// same refused calls (EPERM, ENOSYS for clone3 and the fd-based mount API), the same
// argument checks (ioctl TIOCSTI/TIOCLINUX on the low 32 bits, clone/unshare namespace
// flags, socket families, personality values), i386 and x32 killed as a bad arch, and
// libseccomp's binary-tree layout. Used by bench/syscalls.sh as the bubblewrap peer.
//
//   bwrap_filter > filter.bpf
//   bwrap_filter --allow-all > floor.bpf   a filter that allows everything: what any
//                                          filter costs, before it decides anything
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static int failed(const char* what, int rc) {
    fprintf(stderr, "bwrap_filter: %s: %s\n", what, strerror(-rc));
    return 1;
}

int main(int argc, char** argv) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) return failed("seccomp_init", -ENOMEM);
    if (argc == 2 && strcmp(argv[1], "--allow-all") == 0) {
        int rc = seccomp_export_bpf(ctx, STDOUT_FILENO);
        return rc < 0 ? failed("export", rc) : 0;
    }
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);  // binary tree
    if (rc < 0) return failed("optimize", rc);
    rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc < 0) return failed("badarch", rc);

    static const char* const eperm[] = {
        "mount",
        "umount2",
        "pivot_root",
        "setns",
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "kexec_load",
        "kexec_file_load",
        "init_module",
        "finit_module",
        "delete_module",
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        "keyctl",
        "add_key",
        "request_key",
        "open_by_handle_at",
        "name_to_handle_at",
        "acct",
        "swapon",
        "swapoff",
        "reboot",
        "settimeofday",
        "clock_settime",
        "clock_adjtime",
        "iopl",
        "ioperm",
        "modify_ldt",
        "lookup_dcookie",
        "fanotify_init",
        "quotactl",
        "quotactl_fd",
        "syslog",
        "move_pages",
        "mbind",
        "set_mempolicy",
        "migrate_pages",
        "uselib",
        "ustat",
        "sysfs",
        "vhangup",
        "_sysctl",
        "nfsservctl",
        "create_module",
        "get_kernel_syms",
        "query_module",
    };
    static const char* const enosys[] = {"clone3",   "open_tree", "move_mount", "fsopen",
                                         "fsconfig", "fsmount",   "fspick",     "mount_setattr"};
    for (size_t i = 0; i < sizeof eperm / sizeof eperm[0]; ++i) {
        int nr = seccomp_syscall_resolve_name(eperm[i]);
        if (nr == __NR_SCMP_ERROR) continue;
        if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0)) < 0)
            return failed(eperm[i], rc);
    }
    for (size_t i = 0; i < sizeof enosys / sizeof enosys[0]; ++i) {
        int nr = seccomp_syscall_resolve_name(enosys[i]);
        if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0)) < 0)
            return failed(enosys[i], rc);
    }

    // ioctl: only the low 32 bits of the command count (CVE-2019-10063).
    const unsigned long ioctls[] = {TIOCSTI, TIOCLINUX};
    for (size_t i = 0; i < 2; ++i) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                              SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, ioctls[i]));
        if (rc < 0) return failed("ioctl", rc);
    }
    // Namespace flags on clone (arg0) and unshare (arg0): any of them refuses.
    const unsigned long ns[] = {CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET, CLONE_NEWTIME};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; ++i) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, ns[i], ns[i]));
        if (rc < 0) return failed("clone", rc);
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, ns[i], ns[i]));
        if (rc < 0) return failed("unshare", rc);
    }
    // Exotic socket families.
    const int families[] = {AF_VSOCK, AF_ALG, AF_BLUETOOTH, AF_CAN, AF_KEY, AF_PACKET};
    for (size_t i = 0; i < sizeof families / sizeof families[0]; ++i) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                              SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i]));
        if (rc < 0) return failed("socket", rc);
    }
    // personality: the two flags that weaken the address space.
    const unsigned long pers[] = {0x0400000 /* READ_IMPLIES_EXEC */,
                                  0x0040000 /* ADDR_NO_RANDOMIZE */};
    for (size_t i = 0; i < 2; ++i) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, pers[i], pers[i]));
        if (rc < 0) return failed("personality", rc);
    }
    if ((rc = seccomp_export_bpf(ctx, STDOUT_FILENO)) < 0) return failed("export", rc);
    seccomp_release(ctx);
    return 0;
}

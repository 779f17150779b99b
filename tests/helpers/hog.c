// SPDX-License-Identifier: Apache-2.0
// hog: a static probe that uses up one resource, for the limits tests (RES-01/02/05):
//   hog fork            fork children that wait, until fork fails; exit 3 on EAGAIN
//   hog threads         create threads that wait, until that fails; exit 3 on EAGAIN
//   hog forkloop        every process forks forever, retrying after EAGAIN (never ends)
//   hog spin SECONDS [N]  N processes (default 1) each spinning SECONDS of wall time
//   hog mem MB          allocate and touch MB MiB, then exit 0
// Prints one line saying what it did (key=value), so a test can check it got that far.
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void* idle(void* arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}

static int fork_until_refused(void) {
    int n = 0;
    for (;;) {
        pid_t p = fork();
        if (p == 0) {
            for (;;) pause();
        }
        if (p < 0) {
            int e = errno;
            printf("forked=%d errno=%s\n", n, e == EAGAIN ? "EAGAIN" : strerror(e));
            fflush(stdout);
            return e == EAGAIN ? 3 : 4;
        }
        ++n;
        if (n > 100000) return 5;
    }
}

static int threads_until_refused(void) {
    int n = 0;
    for (;;) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 64 * 1024);
        int e = pthread_create(&t, &a, idle, NULL);
        pthread_attr_destroy(&a);
        if (e != 0) {
            printf("threads=%d errno=%s\n", n, e == EAGAIN ? "EAGAIN" : strerror(e));
            fflush(stdout);
            _exit(e == EAGAIN ? 3 : 4);
        }
        ++n;
        if (n > 100000) _exit(5);
    }
}

static int fork_forever(void) {
    printf("forkloop started\n");
    fflush(stdout);
    for (;;) {
        if (fork() < 0) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

static void spin(double seconds) {
    double end = now() + seconds;
    volatile unsigned long x = 0;
    while (now() < end) ++x;
}

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "fork") == 0) return fork_until_refused();
    if (argc >= 2 && strcmp(argv[1], "threads") == 0) return threads_until_refused();
    if (argc >= 2 && strcmp(argv[1], "forkloop") == 0) return fork_forever();
    if (argc >= 3 && strcmp(argv[1], "spin") == 0) {
        double s = atof(argv[2]);
        int n = argc >= 4 ? atoi(argv[3]) : 1;
        for (int i = 1; i < n; ++i)
            if (fork() == 0) {
                spin(s);
                _exit(0);
            }
        spin(s);
        while (wait(NULL) > 0) {
        }
        printf("spun=%g procs=%d\n", s, n);
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "mem") == 0) {
        long mb = atol(argv[2]);
        for (long i = 0; i < mb; ++i) {
            char* p = malloc(1 << 20);
            if (!p) {
                printf("allocated=%ld malloc failed\n", i);
                return 4;
            }
            memset(p, (int)(i & 0xff) | 1, 1 << 20);
            // Kept where the compiler must assume it is read: clang drops a malloc
            // whose memory is only written, and with it the whole allocation.
            __asm__ volatile("" : : "r"(p) : "memory");
        }
        printf("allocated=%ld\n", mb);
        return 0;
    }
    fprintf(stderr, "usage: hog fork | threads | forkloop | spin SECONDS [N] | mem MB\n");
    return 2;
}

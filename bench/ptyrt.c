// SPDX-License-Identifier: Apache-2.0
// The keystroke harness of bench/tty.sh: runs a command on a new pty (its own
// session, the pty its controlling terminal, in raw mode), waits for its "READY",
// then N times writes one byte to the master and times until that byte comes back
// (bench/ttyecho.c echoes it). Prints the median, p99, mean and maximum in
// microseconds, after WARMUP untimed round trips.
//
//   ptyrt N WARMUP COMMAND [ARG...]
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

// Reads from the master until `want` was seen; 0 when it came, -1 on EOF or after 10 s.
static int wait_for(int m, const char *want) {
    size_t have = 0, len = strlen(want);
    while (have < len) {
        struct pollfd p = {m, POLLIN, 0};
        if (poll(&p, 1, 10000) <= 0) return -1;
        char buf[256];
        ssize_t n = read(m, buf, sizeof buf);
        if (n <= 0) return -1;
        for (ssize_t i = 0; i < n && have < len; ++i) {
            if (buf[i] == want[have])
                ++have;
            else
                have = buf[i] == want[0];
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: ptyrt N WARMUP COMMAND [ARG...]\n");
        return 2;
    }
    int n = atoi(argv[1]), warm = atoi(argv[2]);
    if (n <= 0 || warm < 0) return 2;
    struct winsize ws = {.ws_row = 50, .ws_col = 200};
    int m;
    pid_t pid = forkpty(&m, NULL, NULL, &ws);
    if (pid < 0) {
        perror("ptyrt: forkpty");
        return 1;
    }
    if (pid == 0) {
        // Raw from the start: nothing the harness writes is echoed by the line
        // discipline itself, which would look like a (fast) round trip.
        struct termios t;
        if (tcgetattr(0, &t) == 0) {
            cfmakeraw(&t);
            tcsetattr(0, TCSANOW, &t);
        }
        execvp(argv[3], argv + 3);
        perror("ptyrt: exec");
        _exit(127);
    }
    if (wait_for(m, "READY") != 0) {
        fprintf(stderr, "ptyrt: the command never said READY\n");
        kill(pid, SIGKILL);
        return 1;
    }
    double *lat = calloc((size_t)n, sizeof *lat);
    if (lat == NULL) return 1;
    for (int i = -warm; i < n; ++i) {
        char c = (char)('a' + ((i + warm) % 16));  // a..p: never the 'q' that ends it
        double t0 = now_us();
        if (write(m, &c, 1) != 1) {
            perror("ptyrt: write");
            return 1;
        }
        char s[2] = {c, 0};
        if (wait_for(m, s) != 0) {
            fprintf(stderr, "ptyrt: no echo of round trip %d\n", i);
            kill(pid, SIGKILL);
            return 1;
        }
        if (i >= 0) lat[i] = now_us() - t0;
    }
    (void)!write(m, "q", 1);
    int st;
    waitpid(pid, &st, 0);
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += lat[i];
    qsort(lat, (size_t)n, sizeof *lat, cmp);
    int p99 = (int)((double)n * 0.99);
    if (p99 >= n) p99 = n - 1;
    printf("%d %.1f %.1f %.1f %.1f\n", n, lat[n / 2], lat[p99], sum / n, lat[n - 1]);
    return 0;
}

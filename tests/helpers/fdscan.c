// SPDX-License-Identifier: Apache-2.0
// Probe: lists every open file descriptor (fcntl(F_GETFD) over 0..65535) and what it
// points at, one "N TARGET" line each, then "count N"; exit 0 iff only 0, 1, 2 are open.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
    int count = 0, extra = 0;
    for (int fd = 0; fd < 65536; ++fd) {
        if (fcntl(fd, F_GETFD) == -1) continue;
        char link[64], target[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        target[n > 0 ? n : 0] = '\0';
        printf("%d %s\n", fd, n > 0 ? target : "?");
        ++count;
        if (fd > 2) ++extra;
    }
    printf("count %d\n", count);
    return extra == 0 ? 0 : 1;
}

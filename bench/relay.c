// SPDX-License-Identifier: Apache-2.0
// The `splice-relay` mode of bench/network.sh: a reference relay doing the least
// user-space work a TCP relay can do, to tell what the two extra loopback hops of any
// proxy cost on the machine from what a proxy's own code costs. It accepts
// on 127.0.0.1 at an ephemeral port (printed on stdout), connects each client to
// 127.0.0.1:ORIGIN_PORT and moves bytes with blocking splice(2) through a 1 MiB pipe,
// one thread per direction: no parsing, no policy, no event loop.
//
//   relay ORIGIN_PORT
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

struct leg {
    int from, to;
};

static void *pump(void *arg) {
    struct leg *l = arg;
    int p[2];
    if (pipe(p) != 0) {
        perror("relay: pipe");
        exit(1);
    }
    (void)fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
    for (;;) {
        ssize_t n = splice(l->from, NULL, p[1], NULL, 1 << 20, SPLICE_F_MOVE);
        if (n <= 0) break;
        while (n > 0) {
            ssize_t m = splice(p[0], NULL, l->to, NULL, (size_t)n, SPLICE_F_MOVE);
            if (m <= 0) goto done;
            n -= m;
        }
    }
done:
    shutdown(l->to, SHUT_WR);
    close(p[0]);
    close(p[1]);
    free(l);
    return NULL;
}

static void start(int from, int to) {
    struct leg *l = malloc(sizeof *l);
    pthread_t t;
    if (l == NULL) exit(1);
    l->from = from;
    l->to = to;
    if (pthread_create(&t, NULL, pump, l) != 0) exit(1);
    pthread_detach(t);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: relay ORIGIN_PORT\n");
        return 2;
    }
    int origin = atoi(argv[1]);
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 64) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &len) != 0) {
        perror("relay: listen");
        return 1;
    }
    printf("%d\n", ntohs(a.sin_port));
    fflush(stdout);
    for (;;) {
        int c = accept(ls, NULL, NULL);
        if (c < 0) continue;
        int u = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in o = {.sin_family = AF_INET, .sin_port = htons((unsigned short)origin),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (u < 0 || connect(u, (struct sockaddr *)&o, sizeof o) != 0) {
            close(c);
            if (u >= 0) close(u);
            continue;
        }
        // Each leg closes nothing: the sockets live until the process ends, which is
        // fine for a benchmark's few hundred connections.
        start(c, u);
        start(u, c);
    }
}

// SPDX-License-Identifier: Apache-2.0
// The origin server of bench/network.sh: HTTP/1.1 on 127.0.0.1 at an ephemeral port
// (printed on the first line of stdout), one thread per connection, every answer
// with "Connection: close" so that each request is a new connection. GET /bytes/N
// streams N bytes from a static buffer (the server costs little next to what it
// measures); anything else gets a 2-byte body.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char chunk[1 << 20];

static int send_all(int fd, const char* p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void* serve(void* arg) {
    int fd = (int)(long)arg;
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char req[8192];
    size_t have = 0;
    while (have < sizeof req - 1) {
        ssize_t r = recv(fd, req + have, sizeof req - 1 - have, 0);
        if (r <= 0) goto done;
        have += (size_t)r;
        req[have] = '\0';
        if (strstr(req, "\r\n\r\n") != NULL) break;
    }
    unsigned long long n = 2;
    const char* b = strstr(req, " /bytes/");
    if (b != NULL) n = strtoull(b + 8, NULL, 10);
    char head[256];
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                      "Content-Length: %llu\r\nConnection: close\r\n\r\n",
                      n);
    if (send_all(fd, head, (size_t)hl) != 0) goto done;
    if (b == NULL) {
        send_all(fd, "ok", 2);
        goto done;
    }
    while (n > 0) {
        size_t k = n < sizeof chunk ? (size_t)n : sizeof chunk;
        if (send_all(fd, chunk, k) != 0) break;
        n -= k;
    }
done:
    shutdown(fd, SHUT_WR);
    close(fd);
    return NULL;
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    memset(chunk, 'x', sizeof chunk);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(s, (struct sockaddr*)&a, sizeof a) != 0 || listen(s, 512) != 0 ||
        getsockname(s, (struct sockaddr*)&a, &len) != 0) {
        perror("netserve");
        return 1;
    }
    printf("%d\n", ntohs(a.sin_port));
    fflush(stdout);
    for (;;) {
        int fd = accept4(s, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        pthread_t t;
        if (pthread_create(&t, NULL, serve, (void*)(long)fd) != 0) {
            close(fd);
            continue;
        }
        pthread_detach(t);
    }
}

// SPDX-License-Identifier: Apache-2.0
// A client that leaves a proxied download early, the way that makes a relay's next
// write fail with EPIPE (PROC-06, issue 9): it asks the proxy at 127.0.0.1:3128 for
// http://HOST:PORT/PATH, half-closes its side (so the proxy's socket is in
// CLOSE_WAIT), reads a few bytes and closes with the rest unread (so the kernel
// answers the proxy's next segment with a reset, which a socket in CLOSE_WAIT turns
// into EPIPE). Static, so it runs in any root.
//
//   earlyclose MODE HOST PORT PATH ROUNDS    MODE: http (absolute-form GET), connect, socks
//
// Prints "rounds=N data=M": M rounds got body bytes before closing.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int send_all(int fd, const char* p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

// Reads until `end` was seen (a head's blank line) or n bytes; returns bytes read.
static size_t read_until(int fd, char* buf, size_t cap, const char* end, size_t n) {
    size_t have = 0;
    while (have < cap - 1) {
        ssize_t r = recv(fd, buf + have, cap - 1 - have, 0);
        if (r <= 0) break;
        have += (size_t)r;
        buf[have] = '\0';
        if (end != NULL && strstr(buf, end) != NULL) break;
        if (end == NULL && have >= n) break;
    }
    buf[have] = '\0';
    return have;
}

static int one_round(const char* mode, const char* host, const char* port, const char* path) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons(3128);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr*)&a, sizeof a) != 0) {
        close(fd);
        return 0;
    }
    char req[1024], buf[8192];
    if (strcmp(mode, "http") == 0) {
        snprintf(req, sizeof req, "GET http://%s:%s%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", host, port,
                 path, host, port);
        send_all(fd, req, strlen(req));
    } else {
        if (strcmp(mode, "connect") == 0) {
            snprintf(req, sizeof req, "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", host, port,
                     host, port);
            send_all(fd, req, strlen(req));
            read_until(fd, buf, sizeof buf, "\r\n\r\n", 0);
            if (strncmp(buf, "HTTP/1.1 200", 12) != 0) {
                close(fd);
                return 0;
            }
        } else {
            size_t hl = strlen(host);
            int p = atoi(port);
            unsigned char s[300] = {5, 1, 0};
            send_all(fd, (const char*)s, 3);
            if (read_until(fd, buf, sizeof buf, NULL, 2) < 2 || buf[1] != 0) {
                close(fd);
                return 0;
            }
            size_t n = 0;
            s[n++] = 5, s[n++] = 1, s[n++] = 0, s[n++] = 3, s[n++] = (unsigned char)hl;
            memcpy(s + n, host, hl);
            n += hl;
            s[n++] = (unsigned char)(p >> 8), s[n++] = (unsigned char)p;
            send_all(fd, (const char*)s, n);
            if (read_until(fd, buf, sizeof buf, NULL, 10) < 10 || buf[1] != 0) {
                close(fd);
                return 0;
            }
        }
        snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", path, host, port);
        send_all(fd, req, strlen(req));
    }
    // The end of our side first: the proxy passes it on and keeps relaying down.
    shutdown(fd, SHUT_WR);
    size_t got = read_until(fd, buf, sizeof buf, NULL, 4096);
    // Closed with data unread: a reset, and EPIPE at the proxy's next write.
    close(fd);
    return got > 0;
}

int main(int argc, char** argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: earlyclose http|connect|socks HOST PORT PATH ROUNDS\n");
        return 2;
    }
    int rounds = atoi(argv[5]), data = 0;
    for (int i = 0; i < rounds; ++i) data += one_round(argv[1], argv[2], argv[3], argv[4]);
    printf("rounds=%d data=%d\n", rounds, data);
    return 0;
}

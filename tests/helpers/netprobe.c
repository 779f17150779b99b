// SPDX-License-Identifier: Apache-2.0
// Probe of the sandbox's network (NET-01, NET-09): each argument group is one
// attempt that prints "NAME=RESULT" (OK or the errno's name), so a test compares
// names, not messages that differ between tools. Static, so it runs in any root.
//
//   tcp ADDR PORT     connect (IPv4 or IPv6 literal), 2 s at most
//   udp ADDR PORT     one sendto of a DNS-sized datagram
//   raw_icmp          socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)  (ping's raw socket)
//   raw_ip            socket(AF_INET, SOCK_RAW, IPPROTO_RAW)   (what iptables-legacy opens)
//   packet            socket(AF_PACKET, SOCK_RAW, ETH_P_ALL)
//   lo_down           SIOCSIFFLAGS clearing IFF_UP on lo
//   lo_addr           SIOCSIFADDR 10.0.0.2 on lo
//   tun               open /dev/net/tun
//   ip_forward        open /proc/sys/net/ipv4/ip_forward for writing
//   ifaces            the interfaces (if_nameindex) and whether lo is up
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static void result(const char* name, int err) {
    if (err == 0) {
        printf("%s=OK\n", name);
    } else {
        const char* n = strerrorname_np(err);
        printf("%s=%s\n", name, n ? n : "?");
    }
    fflush(stdout);
}

// Fills *ss from a numeric address; returns its length or 0.
static socklen_t address(const char* text, int port, struct sockaddr_storage* ss) {
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in* a4 = (struct sockaddr_in*)ss;
    struct sockaddr_in6* a6 = (struct sockaddr_in6*)ss;
    if (inet_pton(AF_INET, text, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((unsigned short)port);
        return sizeof *a4;
    }
    if (inet_pton(AF_INET6, text, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((unsigned short)port);
        return sizeof *a6;
    }
    return 0;
}

static int tcp(const char* host, int port) {
    struct sockaddr_storage ss;
    socklen_t len = address(host, port, &ss);
    if (len == 0) return EINVAL;
    int s = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) return errno;
    int err = 0;
    if (connect(s, (struct sockaddr*)&ss, len) < 0) {
        err = errno;
        if (err == EINPROGRESS) {
            struct pollfd p = {s, POLLOUT, 0};
            int n = poll(&p, 1, 2000);
            if (n == 0) {
                err = ETIMEDOUT;
            } else {
                socklen_t el = sizeof err;
                getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el);
            }
        }
    }
    close(s);
    return err;
}

static int udp(const char* host, int port) {
    struct sockaddr_storage ss;
    socklen_t len = address(host, port, &ss);
    if (len == 0) return EINVAL;
    int s = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return errno;
    // A DNS query header for "x." (type A): what an exfiltrating stub would send.
    static const unsigned char q[] = {0x12, 0x34, 1, 0,   0, 1, 0, 0, 0, 0,
                                      0,    0,    1, 'x', 0, 0, 1, 0, 1};
    int err = sendto(s, q, sizeof q, 0, (struct sockaddr*)&ss, len) < 0 ? errno : 0;
    close(s);
    return err;
}

static int sock(int family, int type, int proto) {
    int s = socket(family, type | SOCK_CLOEXEC, proto);
    if (s < 0) return errno;
    close(s);
    return 0;
}

static int lo_ioctl(int down) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    int err = 0;
    if (down) {
        if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
            err = errno;
        } else {
            ifr.ifr_flags &= ~IFF_UP;
            if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) err = errno;
        }
    } else {
        struct sockaddr_in* a = (struct sockaddr_in*)&ifr.ifr_addr;
        a->sin_family = AF_INET;
        inet_pton(AF_INET, "10.0.0.2", &a->sin_addr);
        if (ioctl(s, SIOCSIFADDR, &ifr) < 0) err = errno;
    }
    close(s);
    return err;
}

static int open_err(const char* path, int flags) {
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0) return errno;
    close(fd);
    return 0;
}

static void ifaces(void) {
    struct if_nameindex* list = if_nameindex();
    printf("ifaces=");
    if (list == NULL) {
        printf("%s\n", strerrorname_np(errno));
        return;
    }
    for (struct if_nameindex* i = list; i->if_index != 0; ++i)
        printf("%s%s", i == list ? "" : ",", i->if_name);
    printf("\n");
    if_freenameindex(list);
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0)
        printf("lo=%s\n", (ifr.ifr_flags & IFF_UP) ? "UP" : "DOWN");
    else
        printf("lo=%s\n", strerrorname_np(errno));
    if (s >= 0) close(s);
}

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const char* c = argv[i];
        if ((strcmp(c, "tcp") == 0 || strcmp(c, "udp") == 0) && i + 2 < argc) {
            char name[160];
            snprintf(name, sizeof name, "%s:%s:%s", c, argv[i + 1], argv[i + 2]);
            int port = atoi(argv[i + 2]);
            result(name, c[0] == 't' ? tcp(argv[i + 1], port) : udp(argv[i + 1], port));
            i += 2;
        } else if (strcmp(c, "raw_icmp") == 0) {
            result(c, sock(AF_INET, SOCK_RAW, IPPROTO_ICMP));
        } else if (strcmp(c, "raw_ip") == 0) {
            result(c, sock(AF_INET, SOCK_RAW, IPPROTO_RAW));
        } else if (strcmp(c, "packet") == 0) {
            result(c, sock(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)));
        } else if (strcmp(c, "lo_down") == 0) {
            result(c, lo_ioctl(1));
        } else if (strcmp(c, "lo_addr") == 0) {
            result(c, lo_ioctl(0));
        } else if (strcmp(c, "tun") == 0) {
            result(c, open_err("/dev/net/tun", O_RDWR));
        } else if (strcmp(c, "ip_forward") == 0) {
            result(c, open_err("/proc/sys/net/ipv4/ip_forward", O_WRONLY));
        } else if (strcmp(c, "ifaces") == 0) {
            ifaces();
        } else {
            fprintf(stderr, "netprobe: unknown probe %s\n", c);
            return 2;
        }
    }
    return 0;
}

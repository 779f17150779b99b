// SPDX-License-Identifier: Apache-2.0
// Probe of the unix socket gate (tests/escape/socket_test.cc): each argument group is
// one attempt that prints "LABEL=RESULT" (OK or the errno's name), and, where data
// went both ways, "LABEL.echo=WHAT CAME BACK". Static, so it runs in any root; the
// same binary run on the host is each test's positive control.
//
//   connect LABEL PATH        SOCK_STREAM connect to PATH; sends "ping-LABEL", prints
//                             the answer (the tests' host listeners echo)
//   seqpacket LABEL PATH      the same with SOCK_SEQPACKET
//   viafd LABEL PATH          open PATH with O_PATH and connect to /proc/self/fd/N
//   listen LABEL PATH         bind and listen at PATH ("@NAME": abstract); a forked
//                             child connects (LABEL.connect) and sends one message,
//                             which comes back (LABEL.echo); removes the file after
//   listenvia LABEL PATH VIA  the same, the child connecting to VIA, another path to
//                             the socket ("opath:P": O_PATH open of P, then connect to
//                             /proc/self/fd/N)
//   dgram LABEL PATH          socket(AF_UNIX, SOCK_DGRAM) and one sendto PATH
//   socket LABEL TYPE         socket(AF_UNIX, TYPE): stream, seqpacket, dgram,
//                             dgram_cloexec, dgram_nonblock, raw (a datagram socket
//                             to AF_UNIX), raw_cloexec
//   blockrace LABEL PATH HOW  a listener at PATH with a full backlog that never
//                             accepts; a thread clearing O_NONBLOCK on a socket in a
//                             loop while the main thread makes a blocking connect of
//                             it to PATH: prints LABEL=OK|ERRNO once the connect
//                             returns (a supervisor that connects it blocking would
//                             never return). HOW: fcntl (F_SETFL 0), ioctl (FIONBIO
//                             0), dup (F_SETFL 0 on a second number for the socket)
//   pair LABEL TYPE           socketpair(AF_UNIX, TYPE); for stream and seqpacket one
//                             message each way
//   tcp LABEL block|nonblock  a listener on 127.0.0.1 (ephemeral port), a connect to
//                             it (nonblock: 0 or EINPROGRESS, then poll and SO_ERROR;
//                             prints LABEL.connect=0|EINPROGRESS), one message each way
//   tcpto LABEL ADDR PORT     a blocking connect to ADDR:PORT, "ping-LABEL" and the echo
//   race LABEL HOST DECOY MS  SYS-07: two threads connect(F, &addr) in a loop (MS ms, and
//                             on until 200 tries, up to 10 x MS) while a
//                             third swaps F (dup2) between a unix socket and a socket
//                             of the decoy's family and rewrites addr between the
//                             decoy's address and HOST. DECOY is
//                             "inet" (a listener of the probe's own on 127.0.0.1) or a
//                             path where the probe listens itself. Prints
//                             LABEL.attempts, LABEL.connected (connects that succeeded),
//                             LABEL.host (of those, the ones whose peer is HOST),
//                             LABEL.decoy_hits (connections the decoy accepted) and
//                             LABEL.errors (ERRNO:COUNT, how the others failed)
//
// Exit status: 0 when the probe ran (whatever the calls returned), 2 on bad usage.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void result(const char* label, const char* suffix, int err) {
    const char* n = err == 0 ? "OK" : strerrorname_np(err);
    printf("%s%s=%s\n", label, suffix, n ? n : "?");
    fflush(stdout);
}

// Fills *a for PATH ("@NAME": abstract); returns the address length or 0.
static socklen_t unix_addr(const char* path, struct sockaddr_un* a) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n >= sizeof a->sun_path) return 0;
    memcpy(a->sun_path, path, n);
    if (path[0] == '@') {
        a->sun_path[0] = '\0';
        return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    }
    return (socklen_t)sizeof *a;
}

// Waits up to ms for fd to be readable; returns what was read ("" on nothing).
static void read_echo(int fd, int ms, char* buf, size_t size) {
    buf[0] = '\0';
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return;
    ssize_t n = read(fd, buf, size - 1);
    if (n > 0) buf[n] = '\0';
    for (char* c = buf; *c; ++c)
        if (*c == '\n' || *c == '\r') *c = ' ';
}

// Sends "ping-LABEL" on a connected socket and prints the answer as LABEL.echo.
static void ping(const char* label, int fd) {
    char msg[256], buf[256];
    snprintf(msg, sizeof msg, "ping-%s", label);
    if (write(fd, msg, strlen(msg)) < 0) {
        result(label, ".send", errno);
        return;
    }
    read_echo(fd, 3000, buf, sizeof buf);
    printf("%s.echo=%s\n", label, buf);
    fflush(stdout);
}

static int type_of(const char* name, int* type) {
    static const struct {
        const char* name;
        int type;
    } t[] = {{"stream", SOCK_STREAM},
             {"seqpacket", SOCK_SEQPACKET},
             {"dgram", SOCK_DGRAM},
             {"dgram_cloexec", SOCK_DGRAM | SOCK_CLOEXEC},
             {"dgram_nonblock", SOCK_DGRAM | SOCK_NONBLOCK},
             {"raw", SOCK_RAW},
             {"raw_cloexec", SOCK_RAW | SOCK_CLOEXEC}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; ++i)
        if (strcmp(name, t[i].name) == 0) {
            *type = t[i].type;
            return 0;
        }
    return -1;
}

static void op_connect(const char* label, const char* path, int type, int via_fd) {
    struct sockaddr_un a;
    char proc[64];
    const char* target = path;
    int pfd = -1;
    if (via_fd) {
        pfd = open(path, O_PATH | O_CLOEXEC);
        if (pfd < 0) {
            result(label, ".open", errno);
            result(label, "", errno);
            return;
        }
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
        target = proc;
    }
    socklen_t len = unix_addr(target, &a);
    int s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (s < 0) {
        result(label, "", errno);
    } else if (len == 0) {
        result(label, "", ENAMETOOLONG);
    } else if (connect(s, (struct sockaddr*)&a, len) < 0) {
        result(label, "", errno);
    } else {
        result(label, "", 0);
        ping(label, s);
    }
    if (s >= 0) close(s);
    if (pfd >= 0) close(pfd);
}

// One message each way over a connected pair of sockets.
static int round_trip(const char* label, int a, int b) {
    char buf[256];
    if (write(a, "there", 5) != 5) return errno;
    read_echo(b, 3000, buf, sizeof buf);
    if (write(b, buf, strlen(buf)) < 0) return errno;
    read_echo(a, 3000, buf, sizeof buf);
    printf("%s.echo=%s\n", label, buf);
    fflush(stdout);
    return strcmp(buf, "there") == 0 ? 0 : EPROTO;
}

// The listener here, the client in a forked child (another process, as a dev server
// and its client would be); the child's exit status is its errno (0: the message came
// back).
static void op_listen(const char* label, const char* path, const char* via) {
    struct sockaddr_un a, to;
    socklen_t len = unix_addr(path, &a);
    socklen_t to_len = len;
    to = a;
    if (len == 0) {
        result(label, "", ENAMETOOLONG);
        return;
    }
    int err = 0, l = -1;
    if ((l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) err = errno;
    if (!err && bind(l, (struct sockaddr*)&a, len) < 0) err = errno;
    if (!err && listen(l, 8) < 0) err = errno;
    if (err) {
        result(label, ".listen", err);
        result(label, "", err);
        if (l >= 0) close(l);
        return;
    }
    int done[2];
    if (pipe2(done, O_CLOEXEC) < 0) {
        result(label, "", errno);
        close(l);
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(done[0]);
        char buf[256];
        // VIA: another path to the same socket ("opath:PATH": an O_PATH descriptor of
        // PATH, reached as /proc/self/fd/N).
        if (via != NULL) {
            char proc[64];
            const char* target = via;
            if (strncmp(via, "opath:", 6) == 0) {
                int pfd = open(via + 6, O_PATH | O_CLOEXEC);
                if (pfd < 0) {
                    int e = errno;
                    result(label, ".connect", e);
                    _exit(e & 0xff);
                }
                snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd);
                target = proc;
            }
            to_len = unix_addr(target, &to);
        }
        int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c < 0 || to_len == 0 || connect(c, (struct sockaddr*)&to, to_len) < 0) {
            int e = errno;
            result(label, ".connect", e);
            _exit(e & 0xff);
        }
        result(label, ".connect", 0);
        if (write(c, "there", 5) != 5) _exit(errno & 0xff);
        read_echo(c, 3000, buf, sizeof buf);
        printf("%s.echo=%s\n", label, buf);
        fflush(stdout);
        _exit(strcmp(buf, "there") == 0 ? 0 : EPROTO);
    }
    close(done[1]);
    if (pid < 0) {
        result(label, "", errno);
        close(done[0]);
        close(l);
        return;
    }
    // Serve one connection, or stop when the child is gone without one.
    struct pollfd p[2] = {{l, POLLIN, 0}, {done[0], POLLIN, 0}};
    if (poll(p, 2, 5000) > 0 && (p[0].revents & POLLIN)) {
        int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        if (s >= 0) {
            char buf[256];
            read_echo(s, 3000, buf, sizeof buf);
            if (write(s, buf, strlen(buf)) < 0) err = errno;
            close(s);
        }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!err) err = WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
    result(label, "", err);
    close(done[0]);
    close(l);
    if (path[0] != '@') unlink(path);
}

static void op_dgram(const char* label, const char* path) {
    struct sockaddr_un a;
    socklen_t len = unix_addr(path, &a);
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        result(label, "", errno);
        return;
    }
    char msg[256];
    snprintf(msg, sizeof msg, "dgram-%s", label);
    int err = sendto(s, msg, strlen(msg), 0, (struct sockaddr*)&a, len) < 0 ? errno : 0;
    result(label, "", err);
    close(s);
}

static void op_socket(const char* label, int type) {
    int s = socket(AF_UNIX, type, 0);
    result(label, "", s < 0 ? errno : 0);
    if (s >= 0) close(s);
}

static void op_pair(const char* label, int type) {
    int sv[2];
    if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) < 0) {
        result(label, "", errno);
        return;
    }
    int err = 0;
    if ((type & 0xf) == SOCK_STREAM || (type & 0xf) == SOCK_SEQPACKET)
        err = round_trip(label, sv[0], sv[1]);
    result(label, "", err);
    close(sv[0]);
    close(sv[1]);
}

static void op_tcp(const char* label, int nonblock) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int err = 0, l = -1, c = -1, s = -1;
    if ((l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) err = errno;
    if (!err && bind(l, (struct sockaddr*)&a, len) < 0) err = errno;
    if (!err && listen(l, 8) < 0) err = errno;
    if (!err && getsockname(l, (struct sockaddr*)&a, &len) < 0) err = errno;
    if (err) result(label, ".listen", err);
    if (!err &&
        (c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0)) < 0)
        err = errno;
    if (!err) {
        int r = connect(c, (struct sockaddr*)&a, sizeof a);
        int e = r < 0 ? errno : 0;
        result(label, ".connect", e);
        if (e == EINPROGRESS && nonblock) {
            struct pollfd p = {c, POLLOUT, 0};
            if (poll(&p, 1, 3000) <= 0) {
                e = ETIMEDOUT;
            } else {
                socklen_t el = sizeof e;
                if (getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &el) < 0) e = errno;
            }
            result(label, ".so_error", e);
        }
        err = e;
    }
    if (!err && (s = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0) err = errno;
    if (!err) err = round_trip(label, c, s);
    result(label, "", err);
    if (s >= 0) close(s);
    if (c >= 0) close(c);
    if (l >= 0) close(l);
}

static void op_tcpto(const char* label, const char* host, int port) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
        result(label, "", EINVAL);
        return;
    }
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        result(label, "", errno);
        return;
    }
    if (connect(s, (struct sockaddr*)&a, sizeof a) < 0) {
        result(label, "", errno);
    } else {
        result(label, "", 0);
        ping(label, s);
    }
    close(s);
}

// ---- race -------------------------------------------------------------------------

enum { kSlot = 77 };  // the descriptor number both threads use

static union {
    struct sockaddr_un un;
    struct sockaddr_in in;
    char raw[sizeof(struct sockaddr_un)];
} shared_addr;  // rewritten under the connecting threads' feet
static struct sockaddr_un host_addr, decoy_un;
static struct sockaddr_in decoy_in;
static int decoy_family;
static atomic_int stop_race;
static atomic_long attempts, connected, reached_host, decoy_hits;
static atomic_long errors[256];  // how the other attempts failed, by errno

// A fast copy (a torn address is only a failed connect) the compiler may not drop.
static void copy_addr(const void* from, size_t n) {
    memcpy(shared_addr.raw, from, n);
    __asm__ volatile("" ::: "memory");
}

// Keeps the current state for 0 to 60 us (a quarter of the time not at all): about
// one round trip to a supervisor, so that some check and some use fall on either
// side of a flip.
static void hold(unsigned* seed) {
    *seed = *seed * 1103515245u + 12345u;
    unsigned r = *seed >> 8;
    if (r % 4 == 0) return;
    long ns = (long)(r % 60000);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

static void swap_slot(int family) {
    int s = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) return;
    dup2(s, kSlot);
    close(s);
}

static long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static void set_benign(void) {
    if (decoy_family == AF_INET)
        copy_addr(&decoy_in, sizeof decoy_in);
    else
        copy_addr(&decoy_un, sizeof decoy_un);
}

static void* flipper(void* unused) {
    (void)unused;
    unsigned seed = (unsigned)getpid();
    for (unsigned long i = 0; !atomic_load(&stop_race); ++i) {
        // 5 ms in every 50 calm: a fresh decoy socket and the decoy's address, left
        // alone for 200 us at a time, so that allowed connects do go through (the
        // race's own control: its connects were not all refused for other reasons).
        if (now_ms() % 50 < 5) {
            swap_slot(decoy_family);
            set_benign();
            struct timespec d = {0, 200000};
            nanosleep(&d, NULL);
            continue;
        }
        hold(&seed);
        switch (i % 4) {
        case 0:  // a benign pair: a decoy-family socket and the decoy's address
            swap_slot(decoy_family);
            set_benign();
            break;
        case 1:  // the attack's address under a benign socket
            copy_addr(&host_addr, sizeof host_addr);
            break;
        case 2:  // the attack's socket under the benign address
            swap_slot(AF_UNIX);
            set_benign();
            break;
        case 3:  // the attack: a unix socket and the host's path
            copy_addr(&host_addr, sizeof host_addr);
            break;
        }
    }
    return NULL;
}

static void* connector(void* unused) {
    (void)unused;
    while (!atomic_load(&stop_race)) {
        int r = connect(kSlot, (struct sockaddr*)&shared_addr, sizeof(struct sockaddr_un));
        atomic_fetch_add(&attempts, 1);
        int e = r == 0 ? 0 : errno;
        if (e > 0 && e < 256) atomic_fetch_add(&errors[e], 1);
        if (r == 0 || e == EINPROGRESS) {
            atomic_fetch_add(&connected, 1);
            struct sockaddr_un peer;
            socklen_t pl = sizeof peer;
            memset(&peer, 0, sizeof peer);
            if (getpeername(kSlot, (struct sockaddr*)&peer, &pl) == 0 &&
                peer.sun_family == AF_UNIX && strcmp(peer.sun_path, host_addr.sun_path) == 0)
                atomic_fetch_add(&reached_host, 1);
        }
    }
    return NULL;
}

// Accepts and closes whatever reaches the decoy listener, so its backlog never fills.
static void* drain(void* arg) {
    int l = *(int*)arg;
    while (!atomic_load(&stop_race)) {
        struct pollfd p = {l, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0) continue;
        int c;
        while ((c = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
            atomic_fetch_add(&decoy_hits, 1);
            close(c);
        }
    }
    return NULL;
}

static void op_race(const char* label, const char* host, const char* decoy, int ms) {
    if (unix_addr(host, &host_addr) == 0) {
        result(label, "", ENAMETOOLONG);
        return;
    }
    int l;
    if (strcmp(decoy, "inet") == 0) {
        decoy_family = AF_INET;
        memset(&decoy_in, 0, sizeof decoy_in);
        decoy_in.sin_family = AF_INET;
        decoy_in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof decoy_in;
        l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (l < 0 || bind(l, (struct sockaddr*)&decoy_in, len) < 0 || listen(l, 4096) < 0 ||
            getsockname(l, (struct sockaddr*)&decoy_in, &len) < 0) {
            result(label, ".decoy", errno);
            return;
        }
    } else {
        decoy_family = AF_UNIX;
        socklen_t len = unix_addr(decoy, &decoy_un);
        unlink(decoy);
        l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (len == 0 || l < 0 || bind(l, (struct sockaddr*)&decoy_un, len) < 0 ||
            listen(l, 4096) < 0) {
            result(label, ".decoy", errno);
            return;
        }
    }
    result(label, ".decoy", 0);
    swap_slot(decoy_family);
    copy_addr(decoy_family == AF_INET ? (const void*)&decoy_in : (const void*)&decoy_un,
              decoy_family == AF_INET ? sizeof decoy_in : sizeof decoy_un);
    atomic_store(&stop_race, 0);
    pthread_t t[4];
    pthread_create(&t[0], NULL, drain, &l);
    pthread_create(&t[1], NULL, flipper, NULL);
    pthread_create(&t[2], NULL, connector, NULL);
    pthread_create(&t[3], NULL, connector, NULL);
    struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    // At least 200 tries, however slow each is on a loaded machine (every connect
    // inside is a round trip to the supervisor), for at most ten times as long.
    const struct timespec tick = {0, 10 * 1000000L};
    for (long waited = 0; atomic_load(&attempts) < 200 && waited < 9L * ms; waited += 10) nanosleep(&tick, NULL);
    atomic_store(&stop_race, 1);
    for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
    close(l);
    close(kSlot);
    if (decoy_family == AF_UNIX) unlink(decoy);
    printf("%s.attempts=%ld\n%s.connected=%ld\n%s.host=%ld\n%s.decoy_hits=%ld\n", label,
           atomic_load(&attempts), label, atomic_load(&connected), label,
           atomic_load(&reached_host), label, atomic_load(&decoy_hits));
    printf("%s.errors=", label);
    for (int e = 1; e < 256; ++e) {
        long n = atomic_load(&errors[e]);
        const char* name = strerrorname_np(e);
        if (n > 0) printf("%s:%ld,", name ? name : "?", n);
        atomic_store(&errors[e], 0);
    }
    printf("\n");
    result(label, "", 0);
    atomic_store(&attempts, 0);
    atomic_store(&connected, 0);
    atomic_store(&reached_host, 0);
    atomic_store(&decoy_hits, 0);
}

static int usage(void) {
    fprintf(stderr,
            "usage: unixsock [connect|seqpacket|viafd|listen|dgram LABEL PATH] [socket|pair LABEL "
            "TYPE]\n"
            "                [listenvia LABEL PATH VIA]\n"
            "                [tcp LABEL block|nonblock] [tcpto LABEL ADDR PORT]\n"
            "                [race LABEL HOSTPATH inet|DECOYPATH MS]...\n");
    return 2;
}

static atomic_int g_block_fd = -1;
static atomic_int g_block_stop;

static void* clear_nonblock(void* arg) {
    const char* how = arg;
    while (!atomic_load(&g_block_stop)) {
        int fd = atomic_load(&g_block_fd);
        if (fd < 0) continue;
        if (strcmp(how, "ioctl") == 0) {
            int off = 0;
            (void)ioctl(fd, FIONBIO, &off);
        } else if (strcmp(how, "dup") == 0) {
            int d = dup(fd);
            if (d >= 0) {
                (void)fcntl(d, F_SETFL, 0);
                close(d);
            }
        } else {
            (void)fcntl(fd, F_SETFL, 0);
        }
    }
    return NULL;
}

static void op_blockrace(const char* label, const char* path, const char* how) {
    struct sockaddr_un a;
    socklen_t len = unix_addr(path, &a);
    unlink(path);
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l < 0 || len == 0 || bind(l, (struct sockaddr*)&a, len) != 0 || listen(l, 0) != 0) {
        result(label, ".listen", errno);
        return;
    }
    // Fill the backlog: non-blocking connects until the listener refuses more.
    int fill[64], n = 0;
    while (n < 64) {
        int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c < 0) break;
        if (connect(c, (struct sockaddr*)&a, len) != 0) {
            close(c);
            break;
        }
        fill[n++] = c;
    }
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    atomic_store(&g_block_fd, s);
    // Several threads clearing it: the more calls of theirs the kernel holds at once,
    // the likelier one runs in the supervisor's moment.
    pthread_t t[4];
    for (int i = 0; i < 4; ++i) pthread_create(&t[i], NULL, clear_nonblock, (void*)how);
    int rc = 0;
    // Many tries: the race needs the supervisor's moment between its fcntl and its
    // connect. Each connect is answered at once (EAGAIN) unless the supervisor blocks.
    for (int i = 0; i < 2000 && rc == 0; ++i) {
        int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        atomic_store(&g_block_fd, c);
        if (connect(c, (struct sockaddr*)&a, len) != 0) rc = errno == EAGAIN ? 0 : errno;
        close(c);
    }
    atomic_store(&g_block_stop, 1);
    for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
    result(label, "", rc);
    close(s);
    for (int i = 0; i < n; ++i) close(fill[i]);
    close(l);
    unlink(path);
}

int main(int argc, char** argv) {
    for (int i = 1; i < argc;) {
        const char* op = argv[i];
        int left = argc - i - 1;
        int type = 0;
        if (left >= 2 && strcmp(op, "connect") == 0) {
            op_connect(argv[i + 1], argv[i + 2], SOCK_STREAM, 0);
            i += 3;
        } else if (left >= 2 && strcmp(op, "seqpacket") == 0) {
            op_connect(argv[i + 1], argv[i + 2], SOCK_SEQPACKET, 0);
            i += 3;
        } else if (left >= 2 && strcmp(op, "viafd") == 0) {
            op_connect(argv[i + 1], argv[i + 2], SOCK_STREAM, 1);
            i += 3;
        } else if (left >= 2 && strcmp(op, "listen") == 0) {
            op_listen(argv[i + 1], argv[i + 2], NULL);
            i += 3;
        } else if (left >= 3 && strcmp(op, "listenvia") == 0) {
            op_listen(argv[i + 1], argv[i + 2], argv[i + 3]);
            i += 4;
        } else if (left >= 2 && strcmp(op, "dgram") == 0) {
            op_dgram(argv[i + 1], argv[i + 2]);
            i += 3;
        } else if (left >= 2 && strcmp(op, "socket") == 0 && type_of(argv[i + 2], &type) == 0) {
            op_socket(argv[i + 1], type);
            i += 3;
        } else if (left >= 2 && strcmp(op, "pair") == 0 && type_of(argv[i + 2], &type) == 0) {
            op_pair(argv[i + 1], type);
            i += 3;
        } else if (left >= 3 && strcmp(op, "blockrace") == 0) {
            op_blockrace(argv[i + 1], argv[i + 2], argv[i + 3]);
            i += 4;
        } else if (left >= 2 && strcmp(op, "tcp") == 0) {
            op_tcp(argv[i + 1], strcmp(argv[i + 2], "nonblock") == 0);
            i += 3;
        } else if (left >= 3 && strcmp(op, "tcpto") == 0) {
            op_tcpto(argv[i + 1], argv[i + 2], atoi(argv[i + 3]));
            i += 4;
        } else if (left >= 4 && strcmp(op, "race") == 0) {
            op_race(argv[i + 1], argv[i + 2], argv[i + 3], atoi(argv[i + 4]));
            i += 5;
        } else {
            return usage();
        }
    }
    return 0;
}

// SPDX-License-Identifier: Apache-2.0
// Probe in the style of bubblewrap's try-syscall.c: performs one operation named on
// the command line and exits with its errno (0 on success), printing "ok ..." or
// "errno N (text)". Static, so it runs in any constructed root.
//
//   create PATH           open(O_WRONLY|O_CREAT) and write a line
//   write PATH DATA       open(O_WRONLY) an existing file and write DATA
//   read PATH             print the file's first 64 KiB
//   kill PID SIG          kill(PID, SIG)
//   killall HOSTNS SIG [VICTIM]
//                         kill(-1, SIG), refused (exit 200) unless /proc/self/ns/pid
//                         differs from HOSTNS: a guard so a broken pid namespace can
//                         never turn this probe into a host-wide kill; then prints
//                         "victim=dead|alive" for the pid VICTIM
//   pidfd_open PID        pidfd_open(PID, 0)
//   setgroups             setgroups(0, NULL)
//   userns_selfmap        unshare(CLONE_NEWUSER), then write setgroups/uid_map/gid_map
//                         mapping 0 to the current ids (the positive control of CAP-03)
//   statfs PATH           print f_type in hex
//   lstat PATH            print the file type and, for devices, major:minor
//   getcwd                print getcwd()
//   chmod PATH MODE       chmod(PATH, octal MODE)
//   chown PATH UID GID    chown(PATH, UID, GID); -1 keeps an id (and still sets ctime)
//   utime PATH            utimensat(PATH, NULL): both times to now
//   setxattr PATH NAME V  setxattr(PATH, NAME, V)
//   truncate PATH LEN     truncate(PATH, LEN)
//   mknod PATH            mknod(PATH, S_IFCHR|0600, 1:3), unlinked again if it was made
//   mkdir PATH            mkdir(PATH, 0700), removed again if it was made
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

static int report(int rc) {
    if (rc == 0) {
        printf("ok\n");
        return 0;
    }
    int e = errno;
    printf("errno %d (%s)\n", e, strerror(e));
    return e > 0 && e < 200 ? e : 199;
}

static int write_file(const char* path, const char* data, int flags) {
    int fd = open(path, flags | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    size_t len = strlen(data);
    ssize_t n = write(fd, data, len);
    int e = errno;
    close(fd);
    if (n != (ssize_t)len) {
        errno = n < 0 ? e : EIO;
        return -1;
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: trysys OP ARGS...\n");
        return 250;
    }
    const char* op = argv[1];
    if (strcmp(op, "create") == 0 && argc == 3) {
        return report(write_file(argv[2], "aj-probe\n", O_WRONLY | O_CREAT | O_TRUNC));
    }
    if (strcmp(op, "write") == 0 && argc == 4) {
        return report(write_file(argv[2], argv[3], O_WRONLY));
    }
    if (strcmp(op, "read") == 0 && argc == 3) {
        int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
        if (fd < 0) return report(-1);
        char buf[65536];
        ssize_t n = read(fd, buf, sizeof buf);
        int e = errno;
        close(fd);
        if (n < 0) {
            errno = e;
            return report(-1);
        }
        fwrite(buf, 1, (size_t)n, stdout);
        printf("\n");
        return report(0);
    }
    if (strcmp(op, "kill") == 0 && argc == 4) {
        return report(kill((pid_t)atoi(argv[2]), atoi(argv[3])));
    }
    if (strcmp(op, "killall") == 0 && (argc == 4 || argc == 5)) {
        char ns[256];
        ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
        if (n <= 0) {
            printf("refusing: cannot read /proc/self/ns/pid\n");
            return 200;
        }
        ns[n] = '\0';
        if (strcmp(ns, argv[2]) == 0) {
            printf("refusing: still in the host pid namespace %s\n", ns);
            return 200;
        }
        fflush(stdout);
        int rc = report(kill(-1, atoi(argv[3])));
        if (argc == 5) {
            // The victim is not our child: dead means gone or a zombie awaiting init.
            const char* verdict = "alive";
            for (int i = 0; i < 50; ++i) {
                char path[64], buf[512];
                snprintf(path, sizeof path, "/proc/%s/stat", argv[4]);
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
                if (fd >= 0) close(fd);
                char* close_paren = n > 0 ? (buf[n] = '\0', strrchr(buf, ')')) : NULL;
                if (n <= 0 || (close_paren && (close_paren[2] == 'Z' || close_paren[2] == 'X'))) {
                    verdict = "dead";
                    break;
                }
                usleep(10000);
            }
            printf("victim=%s\n", verdict);
        }
        return rc;
    }
    if (strcmp(op, "pidfd_open") == 0 && argc == 3) {
        long fd = syscall(SYS_pidfd_open, atoi(argv[2]), 0);
        return report(fd < 0 ? -1 : 0);
    }
    if (strcmp(op, "setgroups") == 0 && argc == 2) {
        return report(setgroups(0, NULL));
    }
    if (strcmp(op, "userns_selfmap") == 0 && argc == 2) {
        uid_t uid = getuid();
        gid_t gid = getgid();
        if (unshare(CLONE_NEWUSER) != 0) return report(-1);
        char map[64];
        if (write_file("/proc/self/setgroups", "deny", O_WRONLY) != 0) return report(-1);
        snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
        if (write_file("/proc/self/uid_map", map, O_WRONLY) != 0) return report(-1);
        snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
        return report(write_file("/proc/self/gid_map", map, O_WRONLY));
    }
    if (strcmp(op, "statfs") == 0 && argc == 3) {
        struct statfs sf;
        if (statfs(argv[2], &sf) != 0) return report(-1);
        printf("f_type 0x%lx\n", (unsigned long)sf.f_type);
        return report(0);
    }
    if (strcmp(op, "lstat") == 0 && argc == 3) {
        struct stat st;
        if (lstat(argv[2], &st) != 0) return report(-1);
        const char* t = S_ISDIR(st.st_mode)    ? "dir"
                        : S_ISLNK(st.st_mode)  ? "symlink"
                        : S_ISCHR(st.st_mode)  ? "chr"
                        : S_ISBLK(st.st_mode)  ? "blk"
                        : S_ISREG(st.st_mode)  ? "reg"
                        : S_ISFIFO(st.st_mode) ? "fifo"
                        : S_ISSOCK(st.st_mode) ? "sock"
                                               : "other";
        printf("type %s rdev %u:%u mode 0%o uid %u\n", t, major(st.st_rdev), minor(st.st_rdev),
               (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
        return report(0);
    }
    if (strcmp(op, "getcwd") == 0 && argc == 2) {
        char buf[4096];
        if (getcwd(buf, sizeof buf) == NULL) return report(-1);
        printf("cwd %s\n", buf);
        return report(0);
    }
    if (strcmp(op, "chmod") == 0 && argc == 4) {
        return report(chmod(argv[2], (mode_t)strtoul(argv[3], NULL, 8)));
    }
    if (strcmp(op, "chown") == 0 && argc == 5) {
        return report(chown(argv[2], (uid_t)atol(argv[3]), (gid_t)atol(argv[4])));
    }
    if (strcmp(op, "utime") == 0 && argc == 3) {
        return report(utimensat(AT_FDCWD, argv[2], NULL, 0));
    }
    if (strcmp(op, "setxattr") == 0 && argc == 5) {
        return report(setxattr(argv[2], argv[3], argv[4], strlen(argv[4]), 0));
    }
    if (strcmp(op, "truncate") == 0 && argc == 4) {
        return report(truncate(argv[2], (off_t)atoll(argv[3])));
    }
    if (strcmp(op, "mknod") == 0 && argc == 3) {
        int rc = mknod(argv[2], S_IFCHR | 0600, makedev(1, 3));
        int e = errno;
        if (rc == 0) unlink(argv[2]);
        errno = e;
        return report(rc);
    }
    if (strcmp(op, "mkdir") == 0 && argc == 3) {
        int rc = mkdir(argv[2], 0700);
        int e = errno;
        if (rc == 0) rmdir(argv[2]);
        errno = e;
        return report(rc);
    }
    fprintf(stderr, "trysys: unknown operation or wrong arguments: %s\n", op);
    return 250;
}

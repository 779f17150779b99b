// SPDX-License-Identifier: Apache-2.0
// Probe: tries to reach host files through every inherited descriptor above 2
// (CVE-2024-21626 class): reads files and lists directories through the fd, through
// "../../.." relative to it, through /proc/self/fd/N and after fchdir(fd). Prints
// everything it reads; exit 0 iff no descriptor above 2 was open.
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void dump_fd(int fd, const char* what) {
    char buf[4097];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0) n = 0;
    buf[n] = '\0';
    printf("read %s: %s\n", what, buf);
}

static void list_dir(int at, const char* what, int read_files) {
    int d = openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0) {
        printf("list %s: failed\n", what);
        return;
    }
    DIR* dir = fdopendir(d);
    if (dir == NULL) {
        close(d);
        return;
    }
    struct dirent* e;
    while ((e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        printf("list %s: %s\n", what, e->d_name);
        if (!read_files) continue;
        int f = openat(dirfd(dir), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (f < 0) continue;
        struct stat st;
        if (fstat(f, &st) == 0 && S_ISREG(st.st_mode)) {
            char label[512];
            snprintf(label, sizeof label, "%s/%s", what, e->d_name);
            dump_fd(f, label);
        }
        close(f);
    }
    closedir(dir);
}

int main(void) {
    int extra = 0;
    for (int fd = 3; fd < 65536; ++fd) {
        if (fcntl(fd, F_GETFD) == -1) continue;
        ++extra;
        char path[64], target[4096], label[128];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, target, sizeof target - 1);
        target[n > 0 ? n : 0] = '\0';
        printf("fd %d: %s\n", fd, target);
        struct stat st;
        if (fstat(fd, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            snprintf(label, sizeof label, "fd%d", fd);
            list_dir(fd, label, 1);
            int up = openat(fd, "../../..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (up >= 0) {
                snprintf(label, sizeof label, "fd%d/../../..", fd);
                list_dir(up, label, 0);
                close(up);
            }
            int saved = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (fchdir(fd) == 0) {
                char cwd[4096];
                printf("fchdir fd%d: cwd %s\n", fd, getcwd(cwd, sizeof cwd) ? cwd : "(getcwd failed)");
                if (saved >= 0 && fchdir(saved) != 0) perror("fchdir back");
            }
            if (saved >= 0) close(saved);
        } else if (S_ISREG(st.st_mode)) {
            // Reopen through /proc: works for O_PATH descriptors too.
            int f = open(path, O_RDONLY | O_CLOEXEC);
            if (f >= 0) {
                snprintf(label, sizeof label, "fd%d", fd);
                dump_fd(f, label);
                close(f);
            }
        } else {
            printf("fd %d: mode 0%o\n", fd, (unsigned)st.st_mode);
        }
    }
    printf("extra %d\n", extra);
    return extra == 0 ? 0 : 1;
}

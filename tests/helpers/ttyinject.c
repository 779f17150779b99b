// SPDX-License-Identifier: Apache-2.0
// TTY-01's attack: pushes argv[1] into the input queue of the terminal on fd 0 with
// TIOCSTI, a byte at a time, and prints "tiocsti=OK" or the errno's name. On the
// user's own terminal, the line runs in their shell once the sandbox has exited.
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: ttyinject TEXT\n");
        return 2;
    }
    const char* text = argv[1];
    int err = 0;
    for (const char* p = text; *p != '\0'; ++p) {
        char c = *p == '|' ? '\n' : *p;  // '|' stands for Enter, which a shell word cannot hold
        if (ioctl(0, TIOCSTI, &c) < 0) {
            err = errno;
            break;
        }
    }
    char sub = 2;  // TIOCLINUX subcode 2: set selection (a paste follows with 3)
    int lr = ioctl(0, TIOCLINUX, &sub);
    int lerr = lr < 0 ? errno : 0;
    printf("tiocsti=%s\n", err == 0       ? "OK"
                           : err == EPERM ? "EPERM"
                           : err == EIO   ? "EIO"
                                          : strerror(err));
    printf("tioclinux=%s\n", lerr == 0        ? "OK"
                             : lerr == EPERM  ? "EPERM"
                             : lerr == EINVAL ? "EINVAL"
                             : lerr == ENOTTY ? "ENOTTY"
                                              : strerror(lerr));
    return 0;
}

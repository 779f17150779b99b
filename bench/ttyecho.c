// SPDX-License-Identifier: Apache-2.0
// The program inside for the keystroke round trip of bench/tty.sh: puts its terminal
// in raw mode (as an editor or a shell's line editor does), says "READY", then writes
// back every byte it reads, one read and one write per byte, until it reads 'q'.
#include <stdio.h>
#include <termios.h>
#include <unistd.h>

int main(void) {
    struct termios t;
    if (tcgetattr(0, &t) == 0) {
        cfmakeraw(&t);
        t.c_cc[VMIN] = 1;
        t.c_cc[VTIME] = 0;
        (void)tcsetattr(0, TCSANOW, &t);
    }
    if (write(1, "READY", 5) != 5) return 1;
    for (;;) {
        char c;
        ssize_t n = read(0, &c, 1);
        if (n <= 0) return n == 0 ? 0 : 1;
        if (c == 'q') return 0;
        if (write(1, &c, 1) != 1) return 1;
    }
}

// SPDX-License-Identifier: Apache-2.0
// Probe: prints the Cap* and NoNewPrivs lines of /proc/self/status and what prctl
// (PR_CAPBSET_READ, PR_CAP_AMBIENT_IS_SET, PR_GET_NO_NEW_PRIVS, PR_GET_SECUREBITS)
// and capget report; exit 0 iff every set is empty and no_new_privs is on.
#define _GNU_SOURCE
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    int dirty = 0;
    FILE* f = fopen("/proc/self/status", "re");
    if (f == NULL) {
        printf("status: unreadable\n");
        dirty = 1;
    } else {
        char line[512];
        while (fgets(line, sizeof line, f) != NULL) {
            if (strncmp(line, "Cap", 3) == 0) {
                fputs(line, stdout);
                const char* v = strchr(line, ':');
                for (v = v ? v + 1 : line; *v != '\0' && *v != '\n'; ++v)
                    if (*v != '0' && *v != ' ' && *v != '\t') dirty = 1;
            } else if (strncmp(line, "NoNewPrivs", 10) == 0) {
                fputs(line, stdout);
            }
        }
        fclose(f);
    }

    printf("prctl_bounding:");
    int any = 0;
    for (int c = 0; c < 64; ++c) {
        int r = prctl(PR_CAPBSET_READ, c, 0, 0, 0);
        if (r < 0) break;  // EINVAL past the kernel's last capability
        if (r == 1) {
            printf(" %d", c);
            any = dirty = 1;
        }
    }
    printf("%s\n", any ? "" : " none");

    printf("prctl_ambient:");
    any = 0;
    for (int c = 0; c < 64; ++c) {
        int r = prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0);
        if (r < 0) break;
        if (r == 1) {
            printf(" %d", c);
            any = dirty = 1;
        }
    }
    printf("%s\n", any ? "" : " none");

    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &hdr, data) == 0) {
        unsigned long long eff = data[0].effective | (unsigned long long)data[1].effective << 32;
        unsigned long long prm = data[0].permitted | (unsigned long long)data[1].permitted << 32;
        unsigned long long inh = data[0].inheritable | (unsigned long long)data[1].inheritable << 32;
        printf("capget: effective=%llx permitted=%llx inheritable=%llx\n", eff, prm, inh);
        if (eff || prm || inh) dirty = 1;
    } else {
        printf("capget: failed\n");
        dirty = 1;
    }

    int nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
    printf("prctl_no_new_privs: %d\n", nnp);
    if (nnp != 1) dirty = 1;
    printf("securebits: 0x%x\n", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
    printf("verdict: %s\n", dirty ? "dirty" : "clean");
    return dirty;
}

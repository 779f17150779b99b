/* SPDX-License-Identifier: Apache-2.0 */
/* A consumer of the installed C API: the versions, options filled by the init
 * function, a policy that loads and one that does not (with its message and class),
 * and one real spawn of a command that is not there (its stage and errno). */
#include <agentjail/agentjail.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                          \
        }                                                                      \
    } while (0)

int main(void) {
    aj_policy *p = NULL;
    aj_error *err = NULL;
    aj_sandbox *sb = NULL;
    aj_run_options opts;
    char version[64];
    int major = -1, minor = -1, patch = -1;

    CHECK(strcmp(aj_version_string(), AJ_EXPECTED_VERSION) == 0);
    CHECK(aj_version(&major, &minor, &patch) == AJ_OK);
    snprintf(version, sizeof version, "%d.%d.%d", major, minor, patch);
    CHECK(strcmp(version, AJ_EXPECTED_VERSION) == 0);

    CHECK(aj_run_options_init(&opts, AJ_RUN_OPTIONS_VERSION) == AJ_OK);
    CHECK(opts.version == AJ_RUN_OPTIONS_VERSION && opts.stdin_fd == -1 && opts.uid == -1);
    CHECK(opts.cgroup == AJ_CGROUP_CALLER);
    CHECK(aj_run_options_init(&opts, AJ_RUN_OPTIONS_VERSION + 1) == AJ_EINVAL);

    CHECK(aj_policy_load(&p, "no-such-policy", &err) == AJ_EINVAL);
    CHECK(p == NULL);
    CHECK(strstr(aj_error_message(err), "no-such-policy") != NULL);
    CHECK(aj_error_code(err) == AJ_EINVAL && aj_error_stage(err) == AJ_STAGE_POLICY);
    aj_error_free(err);
    err = NULL;

    CHECK(aj_policy_load(&p, "minimal", &err) == AJ_OK);
    CHECK(p != NULL && err == NULL);
    CHECK(aj_policy_add_ro(p, "relative/path", NULL, &err) == AJ_EINVAL);
    CHECK(aj_error_code(err) == AJ_EINVAL && strstr(aj_error_message(err), "relative") != NULL);
    aj_error_free(err);
    err = NULL;

    /* A real clone: the installed library builds a sandbox and reports the exec. */
    {
        const char *argv[] = {"/no/such/command", NULL};
        CHECK(aj_run_options_init(&opts, AJ_RUN_OPTIONS_VERSION) == AJ_OK);
        opts.uid = getuid();
        opts.gid = getgid();
        CHECK(aj_spawn(&sb, p, argv, &opts, &err) == AJ_ENOTFOUND);
        CHECK(sb == NULL);
        CHECK(aj_error_stage(err) == AJ_STAGE_EXEC && aj_error_errno(err) == ENOENT);
        aj_error_free(err);
        err = NULL;
    }
    aj_policy_free(p);

    printf("C consumer of agentjail %s: ok\n", aj_version_string());
    return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Example of the C API: runs a command in a sandbox and exits with its status.
 *
 *   aj_example_run [--policy NAME] [--limit KEY=VALUE]... [--as UID:GID] [--json] -- CMD [ARGS...]
 *
 * --limit sets a [limits] key (memory=512M, pids=64, timeout=30s, ...); --as runs
 * the command as that identity (root only; by default the caller's own, named
 * explicitly, as the C API asks of a caller that is root); --json prints the result
 * record on stdout after the command ends.
 *
 * Exit status as agentjail's (aj_result_exit_status): the command's own, 128+N when
 * signal N killed it, 124 when the policy's timeout ended it, 137 when its memory
 * limit did, 125 when the sandbox could not be set up, 126/127 when the command could
 * not be executed / was not found. */
#include <agentjail/agentjail.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int usage(void) {
    fprintf(stderr,
            "usage: aj_example_run [--policy NAME] [--limit KEY=VALUE]... [--as UID:GID] [--json] -- CMD "
            "[ARGS...]\n");
    return 125;
}

/* Prints the error, frees it and maps its code to an exit status. */
static int fail(aj_error *err) {
    int code = aj_error_code(err);
    fprintf(stderr, "aj_example_run: %s\n", aj_error_message(err));
    aj_error_free(err);
    if (code == AJ_ENOTFOUND) return 127;
    if (code == AJ_ENOEXEC) return 126;
    return 125;
}

int main(int argc, char **argv) {
    const char *policy_name = "default";
    const char *limits[16];
    int nlimits = 0, json = 0;
    long long uid = (long long)getuid(), gid = (long long)getgid();
    int i = 1;
    while (i < argc) {
        if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc) {
            policy_name = argv[i + 1];
            i += 2;
        } else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc && nlimits < 16) {
            limits[nlimits++] = argv[i + 1];
            i += 2;
        } else if (strcmp(argv[i], "--as") == 0 && i + 1 < argc) {
            if (sscanf(argv[i + 1], "%lld:%lld", &uid, &gid) != 2) return usage();
            i += 2;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
            ++i;
        } else if (strcmp(argv[i], "--") == 0) {
            ++i;
            break;
        } else {
            return usage();
        }
    }
    if (i >= argc) return usage();

    aj_error *err = NULL;
    aj_policy *policy = NULL;
    if (aj_policy_load(&policy, policy_name, &err) != AJ_OK) return fail(err);
    for (int l = 0; l < nlimits; ++l) {
        char key[64];
        const char *eq = strchr(limits[l], '=');
        size_t n = eq != NULL ? (size_t)(eq - limits[l]) : 0;
        if (eq == NULL || n == 0 || n >= sizeof key) {
            aj_policy_free(policy);
            return usage();
        }
        memcpy(key, limits[l], n);
        key[n] = '\0';
        if (aj_policy_set_limit(policy, key, eq + 1, &err) != AJ_OK) {
            aj_policy_free(policy);
            return fail(err);
        }
    }

    aj_run_options opts;
    if (aj_run_options_init(&opts, AJ_RUN_OPTIONS_VERSION) != AJ_OK) {
        aj_policy_free(policy);
        fprintf(stderr, "aj_example_run: the library is older than its header\n");
        return 125;
    }
    opts.uid = uid;
    opts.gid = gid;
    aj_sandbox *sb = NULL;
    /* argv is NULL-terminated from i on, as aj_spawn wants. */
    int rc = aj_spawn(&sb, policy, (const char *const *)&argv[i], &opts, &err);
    aj_policy_free(policy); /* the sandbox does not need it any more */
    if (rc != AJ_OK) return fail(err);

    aj_result *res = NULL;
    rc = aj_sandbox_wait(&res, sb, &err);
    aj_sandbox_free(sb);
    if (rc != AJ_OK) return fail(err);

    int status = aj_result_exit_status(res);
    if (json) {
        char *record = NULL;
        if (aj_result_json(&record, res, &err) != AJ_OK) {
            aj_result_free(res);
            return fail(err);
        }
        printf("%s\n", record);
        aj_string_free(record);
    }
    aj_result_free(res);
    return status;
}

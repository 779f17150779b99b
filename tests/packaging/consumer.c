/* SPDX-License-Identifier: Apache-2.0 */
/* A consumer of the installed C API: version, a policy that loads, one that does
 * not (with its message), and a bad override. Runs no sandbox. */
#include <agentjail/agentjail.h>

#include <stdio.h>
#include <string.h>

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

    CHECK(strcmp(aj_version(), AJ_EXPECTED_VERSION) == 0);

    CHECK(aj_policy_load(&p, "minimal", &err) == AJ_OK);
    CHECK(p != NULL && err == NULL);
    CHECK(aj_policy_add_ro(p, "relative/path", NULL, &err) == AJ_EINVAL);
    CHECK(aj_error_code(err) == AJ_EINVAL && strstr(aj_error_message(err), "relative") != NULL);
    aj_error_free(err);
    err = NULL;
    aj_policy_free(p);
    p = NULL;

    CHECK(aj_policy_load(&p, "no-such-policy", &err) == AJ_EINVAL);
    CHECK(p == NULL);
    CHECK(strstr(aj_error_message(err), "no-such-policy") != NULL);
    aj_error_free(err);

    printf("C consumer of agentjail %s: ok\n", aj_version());
    return 0;
}

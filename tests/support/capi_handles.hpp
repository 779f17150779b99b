// SPDX-License-Identifier: Apache-2.0
// Owners of the C API's handles for tests: each frees its handle at the end of the
// block, and Err hands out a fresh aj_error ** for each call.
#pragma once

#include <agentjail/agentjail.h>

#include <string>
#include <vector>

namespace ajtest::capi {

struct Err {
    aj_error* e = nullptr;
    Err() = default;
    Err(const Err&) = delete;
    Err& operator=(const Err&) = delete;
    ~Err() { aj_error_free(e); }
    aj_error** out() {
        aj_error_free(e);
        e = nullptr;
        return &e;
    }
    std::string message() const { return aj_error_message(e); }
    int code() const { return aj_error_code(e); }
};

struct Pol {
    aj_policy* p = nullptr;
    Pol() = default;
    Pol(const Pol&) = delete;
    Pol& operator=(const Pol&) = delete;
    ~Pol() { aj_policy_free(p); }
};

struct Sb {
    aj_sandbox* s = nullptr;
    Sb() = default;
    Sb(const Sb&) = delete;
    Sb& operator=(const Sb&) = delete;
    ~Sb() { aj_sandbox_free(s); }
};

struct Res {
    aj_result* r = nullptr;
    Res() = default;
    Res(const Res&) = delete;
    Res& operator=(const Res&) = delete;
    ~Res() { aj_result_free(r); }
};

// aj_spawn with argv as a list (NULL added); the error, if any, in err.
inline int spawn(Sb& sb, const aj_policy* p, std::vector<const char*> argv, const aj_run_options* o,
                 Err& err) {
    argv.push_back(nullptr);
    return aj_spawn(&sb.s, p, argv.data(), o, err.out());
}

}  // namespace ajtest::capi

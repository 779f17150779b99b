// SPDX-License-Identifier: Apache-2.0
// A consumer of the installed C++ API (the header-only layer over the C API): load
// a built-in, override it, see errors as exceptions with their class and stage.
#include <agentjail/agentjail.hpp>

#include <cstdio>
#include <cstring>
#include <utility>

int main() {
    if (agentjail::version() != AJ_EXPECTED_VERSION) return 1;
    try {
        auto loaded = agentjail::Policy::load("default");
        agentjail::Policy p = std::move(loaded);  // moves the handle, frees it once
        loaded = agentjail::Policy::load("minimal");
        p.add_ro("/usr/share", "/data");
        p.set_env("FOO", "bar");
        try {
            p.set_hostname("");
            return 1;
        } catch (const agentjail::Error& e) {
            if (e.code() != AJ_EINVAL || e.stage() != AJ_STAGE_POLICY) return 1;
        }
        try {
            agentjail::Policy::load("no-such-policy");
            return 1;
        } catch (const agentjail::Error& e) {
            if (e.code() != AJ_EINVAL || std::strstr(e.what(), "no-such-policy") == nullptr)
                return 1;
        }
        aj_run_options o = agentjail::run_options();
        if (o.version != AJ_RUN_OPTIONS_VERSION || o.cgroup != AJ_CGROUP_CALLER) return 1;
    } catch (const agentjail::Error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    std::printf("C++ consumer of agentjail %s: ok\n", agentjail::version().c_str());
    return 0;
}

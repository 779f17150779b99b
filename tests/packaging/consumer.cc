// SPDX-License-Identifier: Apache-2.0
// A consumer of the installed C++ API: load a built-in, override it, see errors.
#include <agentjail/agentjail.hpp>

#include <cstdio>
#include <cstring>

int main() {
    if (std::strcmp(agentjail::version(), AJ_EXPECTED_VERSION) != 0) return 1;
    auto p = agentjail::Policy::load("default");
    if (!p) {
        std::fprintf(stderr, "load default: %s\n", p.error().message().c_str());
        return 1;
    }
    if (!p->add_ro("/usr/share", "/data")) return 1;
    if (!p->set_env("FOO", "bar")) return 1;
    agentjail::Policy copy = *p;  // copyable, independent
    if (copy.set_hostname("")) return 1;
    auto bad = agentjail::Policy::load("no-such-policy");
    if (bad || bad.error().kind() != agentjail::ErrorKind::invalid_input) return 1;
    std::printf("C++ consumer of agentjail %s: ok\n", agentjail::version());
    return 0;
}

// SPDX-License-Identifier: Apache-2.0
// Compiles the public headers from C++ with nothing else in front of them.
#include <agentjail/agentjail.h>
#include <agentjail/agentjail.hpp>

int main() {
    aj_run_options opts = AJ_RUN_OPTIONS_INIT;
    return opts.version == AJ_RUN_OPTIONS_VERSION ? 0 : 1;
}

// SPDX-License-Identifier: Apache-2.0
// Where the tests find the real agent clients (Claude Code, Codex, Gemini CLI, the
// Anthropic SDK) that scripts/setup.sh installs from npm into <checkout>/.clients, or
// into $AGENTJAIL_CLIENTS_DIR, and the skip message when one is missing. Shared by
// tests/integration/test_agents.cc and test_agents_tui.cc.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace ajclients {

// The install prefix (AGENTJAIL_CLIENTS_DIR there and here); sandboxes get it with
// --ro, since nothing else of the checkout is inside.
inline std::string dir() {
    const char* d = std::getenv("AGENTJAIL_CLIENTS_DIR");
    return d != nullptr && *d != '\0' ? d : std::string(AJ_SOURCE_DIR) + "/.clients";
}
inline std::string node_modules() { return dir() + "/node_modules"; }
inline std::string bin() { return node_modules() + "/.bin"; }

// Empty when the client's executable (a name in node_modules/.bin) can run, else why
// not, for GTEST_SKIP.
inline std::string missing(const std::string& name) {
    std::string path = bin() + "/" + name;
    if (::access(path.c_str(), X_OK) != 0)
        return name + " is not installed at " + path +
               ": run scripts/setup.sh (it installs the pinned agent clients from npm)";
    return {};
}

// The same for a library package (a directory in node_modules), e.g. "@anthropic-ai/sdk".
inline std::string missing_package(const std::string& package) {
    std::string path = node_modules() + "/" + package + "/package.json";
    if (::access(path.c_str(), R_OK) != 0)
        return package + " is not installed at " + node_modules() + "/" + package +
               ": run scripts/setup.sh (it installs the pinned agent clients from npm)";
    return {};
}

}  // namespace ajclients

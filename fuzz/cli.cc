// SPDX-License-Identifier: Apache-2.0
// The run and explain command lines: the input is the argument words, split at NUL
// bytes (the first byte picks the verb). Invariant: every refusal says why (the CLI
// prints it as one line, util::printable), and nothing but parsing happens (no
// sandbox is built here).
#include "fuzz.hpp"

#include "options.hpp"

#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1 || size > 8 * 1024) return 0;
    using agentjail::cli::Verb;
    Verb verb = (data[0] & 1) != 0 ? Verb::explain : Verb::run;
    std::vector<std::string> args;
    ajfuzz::split(ajfuzz::as_text(data + 1, size - 1), '\0',
                  [&](std::string_view w) { args.emplace_back(w); });
    if (args.size() > 256) return 0;
    // A fixed context: relative paths resolve below a directory that does not exist,
    // so no input names a real file by accident (absolute paths may, and are read).
    agentjail::cli::Context ctx{"/nonexistent/agentjail-fuzz/work", "/nonexistent/agentjail-fuzz/home", "", ""};
    auto inv = agentjail::cli::parse_invocation(verb, args, ctx);
    if (!inv) {
        const std::string& m = inv.error().message();
        AJ_FUZZ_CHECK(!m.empty());
    }
    return 0;
}

// SPDX-License-Identifier: Apache-2.0
// Where a secret's value comes from (docs/network.md, "Where a secret comes from"):
// env:VAR, file:PATH, dotenv:FILE[#KEY], json:FILE#dotted.path. The check made when
// the run is planned (without keeping the value), and the read the proxy makes once
// the sandbox exists; the spec's syntax is pure (netrules/secret_spec.hpp).
#pragma once

#include "base/error.hpp"
#include "netrules/secret_spec.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentjail::net {

// What a source holds now, found without keeping the value: every buffer that held
// the file is wiped before it is freed, so the value is not in the memory a sandbox
// cloned afterwards starts from. `environ`: NAME=VALUE of agentjail's environment.
// `expires`: a JSON path, in a json: source's file, to a time in seconds or
// milliseconds since the epoch ("" for none).
struct SourceProbe {
    bool available = false;
    std::string why;  // when not available: "$X is not set", "FILE: no such file", ...
    std::optional<double> expires_at;  // seconds since the epoch, when `expires` found one
};
SourceProbe probe_source(const SourceSpec& spec, const std::string& secret_name,
                         const std::vector<std::string>& environ, const std::string& expires = {});

// The value, for the proxy (after the sandbox exists): one line, not empty. env: is
// read from this process's environment.
Result<std::string> read_source(const SourceSpec& spec, const std::string& secret_name);

// The value of `key` in dotenv text (exposed for the unit tests): blank lines and
// '#' comments, an optional "export " prefix, KEY=VALUE or KEY = VALUE, values bare
// (an inline comment after whitespace and '#' is cut, spaces trimmed), in '...'
// (literal), "..." (\" \\ \n \t escapes) or `...`; the last line of a key wins; no
// ${VAR} expansion. nullopt with *why: key absent, empty, over several lines.
std::optional<std::string> dotenv_value(std::string_view text, std::string_view key,
                                        std::string* why);

}  // namespace agentjail::net

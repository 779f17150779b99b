// SPDX-License-Identifier: Apache-2.0
// A secret's value from its source (docs/network.md, "Where a secret comes from"):
// env:VAR, file:PATH, dotenv:FILE[#KEY], json:FILE#dotted.path. Pure: the caller
// reads the variable and the file (the planner through plan::HostView, the proxy
// through lib/net/secret_source), this finds the value in what was read and checks
// it. Every buffer that held a value or its file is wiped before it is freed
// (base/wiped.hpp).
#pragma once

#include "base/wiped.hpp"
#include "netrules/secret_spec.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentjail::net {

// Reads a file into `out`: "" on success, else why ("PATH: not a regular file").
using FileReader = std::function<std::string(const std::string& path, base::wstring& out)>;
// An environment variable's value into `out`; false when it is not set.
using EnvLookup = std::function<bool(const std::string& name, base::wstring& out)>;
// The lookup in NAME=VALUE lines (a caller's environment as the plan keeps it).
EnvLookup environ_lines(const std::vector<std::string>& environ);

// What a source holds now. `expires`: a JSON path, in a json: source's file, to a
// time in seconds or milliseconds since the epoch ("" for none).
struct SourceProbe {
    bool available = false;
    std::string why;  // when not available: "$X is not set", "FILE: no such file", ...
    bool unset = false;  // not available because the env source's variable is not set
    std::optional<double> expires_at;  // seconds since the epoch, when `expires` found one
};

// Finds the value of `spec` (dotenv: the key, or the secret's own name): one line,
// not empty. `value`, when given, receives it (only when available).
SourceProbe find_source(const SourceSpec& spec, const std::string& secret_name, const EnvLookup& env,
                        const FileReader& read_file, const std::string& expires = {},
                        base::wstring* value = nullptr);

// The value of `key` in dotenv text (exposed for the unit tests): blank lines and
// '#' comments, an optional "export " prefix, KEY=VALUE or KEY = VALUE, values bare
// (an inline comment after whitespace and '#' is cut, spaces trimmed), in '...'
// (literal), "..." (\" \\ \n \t escapes) or `...`; the last line of a key wins; no
// ${VAR} expansion. nullopt with *why: key absent, empty, over several lines.
std::optional<std::string> dotenv_value(std::string_view text, std::string_view key,
                                        std::string* why);

// The keys of dotenv text, in order, each once, and whether its (last) value is one
// the proxy can put in (not empty, one line, no control character). Values are
// neither kept nor returned.
struct DotenvKey {
    std::string key;
    bool value = false;
};
std::vector<DotenvKey> dotenv_keys(std::string_view text);

}  // namespace agentjail::net

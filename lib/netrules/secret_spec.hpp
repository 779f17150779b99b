// SPDX-License-Identifier: Apache-2.0
// A secret's source as written (docs/network.md, "Where a secret comes from"):
// env:VAR, file:PATH, dotenv:FILE[#KEY], json:FILE#dotted.path. Its syntax only
// (pure); reading a source is lib/net/secret_source's.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace agentjail::net {

struct SourceSpec {
    enum class Kind { env, file, dotenv, json };
    Kind kind = Kind::env;
    std::string where;  // env: the variable's name; otherwise the file's path
    // dotenv: the key to read ("" means the secret's own name); json: the dotted path
    // of a string field ("claudeAiOauth.accessToken"; a number segment indexes an array).
    std::string key;
};

// Parses a source spec. A path may be relative (the planner resolves it); dotenv and
// json paths end at the last '#'. nullopt, with a one-line reason in *why, for a bad
// spec; a json path that names a refresh token is refused: that would let whoever
// holds it mint new tokens after the run.
std::optional<SourceSpec> parse_source(std::string_view text, std::string* why);
std::string source_text(const SourceSpec& spec);

// A dotenv key's characters: letters, digits, _ . -
bool dotenv_key_char(char c);

// Whether a JSON path is well formed (segments of anything but '.', none empty).
std::string check_json_path(std::string_view path);

}  // namespace agentjail::net

// SPDX-License-Identifier: Apache-2.0
// The syntax of a secret's source (see secret_spec.hpp).
#include "netrules/secret_spec.hpp"

#include <cctype>

namespace agentjail::net {

bool dotenv_key_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

std::string check_json_path(std::string_view path) {
    if (path.empty()) return "expected a JSON path after '#' (\"claudeAiOauth.accessToken\")";
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t dot = path.find('.', start);
        if (dot == std::string_view::npos) dot = path.size();
        if (dot == start) return "'" + std::string(path) + "': an empty segment in the JSON path";
        start = dot + 1;
    }
    if (path.find('\0') != std::string_view::npos)
        return "a JSON path may not contain a NUL character";
    return {};
}

std::optional<SourceSpec> parse_source(std::string_view text, std::string* why) {
    auto fail = [&](const std::string& w) -> std::optional<SourceSpec> {
        if (why != nullptr) *why = "'" + std::string(text) + "': " + w;
        return std::nullopt;
    };
    SourceSpec s;
    auto split = [&](std::string_view rest) {
        std::size_t hash = rest.rfind('#');
        if (hash == std::string_view::npos) {
            s.where = std::string(rest);
        } else {
            s.where = std::string(rest.substr(0, hash));
            s.key = std::string(rest.substr(hash + 1));
        }
    };
    if (text.substr(0, 4) == "env:") {
        s.kind = SourceSpec::Kind::env;
        s.where = std::string(text.substr(4));
        bool ok = !s.where.empty() && !(s.where[0] >= '0' && s.where[0] <= '9');
        for (char c : s.where)
            ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_');
        if (!ok) return fail("expected env:VARIABLE (letters, digits and _)");
        return s;
    }
    if (text.substr(0, 5) == "file:") {
        s.kind = SourceSpec::Kind::file;
        s.where = std::string(text.substr(5));
    } else if (text.substr(0, 7) == "dotenv:") {
        s.kind = SourceSpec::Kind::dotenv;
        split(text.substr(7));
        if (text.find('#', 7) != std::string_view::npos) {
            bool ok = !s.key.empty();
            for (char c : s.key) ok = ok && dotenv_key_char(c);
            if (!ok)
                return fail(
                    "expected dotenv:FILE or dotenv:FILE#KEY (KEY: letters, digits, _ . -)");
        }
    } else if (text.substr(0, 5) == "json:") {
        s.kind = SourceSpec::Kind::json;
        split(text.substr(5));
        if (text.find('#', 5) == std::string_view::npos)
            return fail("expected json:FILE#dotted.path (the string field to read)");
        if (std::string w = check_json_path(s.key); !w.empty()) return fail(w);
        // The last segment naming a refresh token: it outlives the run and mints new
        // access tokens, so it is never handed to anything.
        std::string last =
            s.key.substr(s.key.rfind('.') == std::string::npos ? 0 : s.key.rfind('.') + 1);
        for (char& c : last) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (last.find("refresh") != std::string::npos)
            return fail(
                "a refresh token is never read or passed (it outlives the run); name the access "
                "token");
    } else {
        return fail(
            "a secret's source is env:VARIABLE, file:PATH, dotenv:FILE[#KEY] or "
            "json:FILE#dotted.path");
    }
    if (s.where.empty()) return fail("expected a file's path");
    if (s.where.find('\0') != std::string::npos)
        return fail("a path may not contain a NUL character");
    return s;
}

std::string source_text(const SourceSpec& s) {
    switch (s.kind) {
    case SourceSpec::Kind::env: return "env:" + s.where;
    case SourceSpec::Kind::file: return "file:" + s.where;
    case SourceSpec::Kind::dotenv: return "dotenv:" + s.where + (s.key.empty() ? "" : "#" + s.key);
    case SourceSpec::Kind::json: return "json:" + s.where + "#" + s.key;
    }
    return {};
}

}  // namespace agentjail::net

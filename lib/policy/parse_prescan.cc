// SPDX-License-Identifier: Apache-2.0
// The pre-scan of a policy file's text before toml++ reads it.
#include "policy/parser.hpp"

namespace agentjail::policy::detail {

// TOML (1.0) allows characters beyond ASCII only inside strings and comments. toml++
// 3.3 classifies such a character met elsewhere with a table that has holes, and
// reaching one is undefined behaviour (its TOML_UNREACHABLE: found by fuzz_policy with
// "a\xd2\x91" after a key, UBSan). So they are refused before toml++ sees the text,
// at the line and column they stand at.
std::optional<Error> non_ascii_outside_strings(std::string_view t, const std::string& file) {
    enum class In { code, comment, basic, basic_ml, literal, literal_ml };
    In in = In::code;
    int line = 1, column = 1;
    // The last character of code before this one, spaces and tabs aside ('\n' at a
    // line's start): a quote opens a string only where a key or a value may start.
    // Elsewhere ("-'x", a bare word's middle) toml++ reads on as a bare value and
    // meets what follows outside any string (found by fuzz_policy: "= -'...\xd2\x91").
    char prev = '\n';
    auto run = [&](size_t i, char q) {
        size_t n = 0;
        while (i + n < t.size() && t[i + n] == q) ++n;
        return n;
    };
    for (size_t i = 0; i < t.size(); ++i) {
        const char c = t[i];
        const auto u = static_cast<unsigned char>(c);
        switch (in) {
        case In::code:
            if (c == '#') {
                in = In::comment;
            } else if ((c == '"' || c == '\'') && std::string_view("\n=[,{.").find(prev) == std::string_view::npos) {
                prev = c;  // no string starts here: the quote is code
            } else if (c == '"' || c == '\'') {
                size_t n = run(i, c);
                if (n >= 3) {
                    in = c == '"' ? In::basic_ml : In::literal_ml;
                    i += 2;
                    column += 2;
                } else if (n == 2) {  // an empty string
                    ++i;
                    ++column;
                } else {
                    in = c == '"' ? In::basic : In::literal;
                }
            } else if (u >= 0x80) {
                return Error{ErrorKind::invalid_input, 0,
                             file + ":" + std::to_string(line) + ":" + std::to_string(column) +
                                 ": a character beyond ASCII outside a string or comment (TOML allows "
                                 "them only there; quote the key: \"...\" = )"};
            }
            if (in == In::code && c != ' ' && c != '\t') prev = c;
            if (in != In::code) prev = '"';  // a string is a value or a key: what follows is not a start
            break;
        case In::comment:
            if (c == '\n') {
                in = In::code;
                prev = '\n';
            }
            break;
        case In::basic:
        case In::literal:
            if (c == '\\' && in == In::basic && i + 1 < t.size() && t[i + 1] != '\n') {
                ++i;
                ++column;
            } else if ((c == '"' && in == In::basic) || (c == '\'' && in == In::literal) || c == '\n') {
                in = In::code;  // closed (or, at a newline, unterminated: toml++ says so)
            }
            break;
        case In::basic_ml:
        case In::literal_ml: {
            const char q = in == In::basic_ml ? '"' : '\'';
            if (c == '\\' && in == In::basic_ml && i + 1 < t.size()) {
                if (t[i + 1] == '\n') break;  // a line-ending backslash: the newline counts below
                ++i;
                ++column;
            } else if (c == q) {
                // Three to five quotes close the string (up to two of them are content).
                size_t n = run(i, q);
                if (n >= 3) in = In::code;
                i += n - 1;
                column += static_cast<int>(n) - 1;
            }
            break;
        }
        }
        if (c == '\n') {
            ++line;
            column = 1;
        } else if ((u & 0xc0) != 0x80) {
            ++column;  // columns count characters, as toml++'s do
        }
    }
    return std::nullopt;
}

}  // namespace agentjail::policy::detail

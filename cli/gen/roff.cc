// SPDX-License-Identifier: Apache-2.0
// roff from plain text and Markdown (roff.hpp). What reaches the page is only text:
// no line of the source can become a request (a leading '.' or '\''), and no
// backslash an escape, so docs/ may say anything.
#include "roff.hpp"

#include <cctype>
#include <cstdio>
#include <sstream>
#include <vector>

namespace agentjail::cli::gen {

namespace {

std::vector<std::string> split_lines(std::string_view text) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : text) {
        if (c == '\n') {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

std::string trim(std::string_view s) {
    const size_t b = s.find_first_not_of(" \t");
    if (b == std::string_view::npos) return {};
    return std::string(s.substr(b, s.find_last_not_of(" \t") - b + 1));
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The code point of the UTF-8 sequence at s[i] (advancing i past it); U+FFFD for a
// broken one.
unsigned decode_utf8(std::string_view s, size_t& i) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned c = byte(i);
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
    unsigned cp = extra == 3 ? c & 0x07 : extra == 2 ? c & 0x0F : c & 0x1F;
    if (extra < 0 || i + static_cast<size_t>(extra) >= s.size()) {
        ++i;
        return 0xFFFD;
    }
    for (int k = 1; k <= extra; ++k) {
        if ((byte(i + static_cast<size_t>(k)) & 0xC0) != 0x80) {
            ++i;
            return 0xFFFD;
        }
        cp = (cp << 6) | (byte(i + static_cast<size_t>(k)) & 0x3F);
    }
    i += static_cast<size_t>(extra) + 1;
    return cp;
}

// A paragraph's lines joined into one run of text.
std::string join_lines(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) {
        const std::string t = trim(l);
        if (t.empty()) continue;
        out += (out.empty() ? "" : " ") + t;
    }
    return out;
}

// "| a | b |" as its cells, trimmed; a '|' inside `code` is no separator.
std::vector<std::string> table_cells(const std::string& row) {
    std::vector<std::string> cells;
    std::string cur;
    bool code = false;
    std::string t = trim(row);
    if (!t.empty() && t.front() == '|') t.erase(0, 1);
    if (!t.empty() && t.back() == '|') t.pop_back();
    for (char c : t) {
        if (c == '`') code = !code;
        if (c == '|' && !code) {
            cells.push_back(trim(cur));
            cur.clear();
        } else {
            cur += c;
        }
    }
    cells.push_back(trim(cur));
    return cells;
}

bool is_table_rule(const std::string& line) {
    const std::string t = trim(line);
    if (t.empty() || t.front() != '|') return false;
    for (char c : t)
        if (c != '|' && c != '-' && c != ':' && c != ' ') return false;
    return true;
}

// A heading's text in capitals, as man pages set .SH, leaving `code` as written.
std::string upper_outside_code(const std::string& s) {
    std::string out;
    bool code = false;
    for (char c : s) {
        if (c == '`') code = !code;
        out += code ? c : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return out;
}

}  // namespace

std::string roff_escape(std::string_view text) {
    std::string out;
    for (size_t i = 0; i < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c >= 0x80) {
            const unsigned cp = decode_utf8(text, i);
            char buf[16];
            std::snprintf(buf, sizeof buf, "\\[u%04X]", cp);
            out += buf;
            continue;
        }
        if (c == '\\')
            out += "\\e";
        else if (c == '-')
            out += "\\-";
        else if (c == '\t')
            out += ' ';
        else if (c == '\n')
            out += '\n';  // roff_lines() guards each line
        else if (c >= 0x20 && c != 0x7F)
            out += static_cast<char>(c);
        ++i;
    }
    return out;
}

std::string roff_arg(std::string_view text) {
    std::string out;
    for (char c : roff_escape(text)) out += c == '"' ? std::string("\\(dq") : std::string(1, c);
    return out;
}

std::string roff_lines(std::string_view escaped) {
    std::string out;
    for (const auto& line : split_lines(escaped)) {
        if (!line.empty() && (line[0] == '.' || line[0] == '\'')) out += "\\&";
        out += line + "\n";
    }
    return out;
}

std::string help_to_roff(std::string_view help) {
    std::ostringstream os;
    std::vector<std::string> fill;
    bool in_nf = false;
    bool space = false;  // a blank line came before what comes next
    bool any = false;    // something was written (the first block needs no space above)
    auto start_block = [&]() {
        if (space && any) os << ".PP\n";
        space = false;
        any = true;
    };
    auto flush = [&]() {
        if (fill.empty()) return;
        start_block();
        os << roff_lines(roff_escape(join_lines(fill)));
        fill.clear();
    };
    auto end_nf = [&]() {
        if (in_nf) os << ".fi\n";
        in_nf = false;
    };
    for (const auto& line : split_lines(help)) {
        if (trim(line).empty()) {
            flush();
            end_nf();
            space = true;
            continue;
        }
        if (line[0] == ' ') {
            // Usage lines, option lists, examples: as they are, under the line above.
            flush();
            if (!in_nf) {
                start_block();
                os << ".nf\n";
                in_nf = true;
            }
            os << roff_lines(roff_escape(line));
            continue;
        }
        end_nf();
        fill.push_back(line);
    }
    flush();
    end_nf();
    return os.str();
}

std::string markdown_inline(std::string_view text) {
    std::string out;
    for (size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (c == '`') {
            const size_t end = text.find('`', i + 1);
            if (end != std::string_view::npos) {
                out += "\\fB" + roff_escape(text.substr(i + 1, end - i - 1)) + "\\fP";
                i = end + 1;
                continue;
            }
        }
        if (c == '[') {
            // [text](target): the text; the target is a file of docs/ or a URL that
            // means nothing on a man page's reader's machine.
            const size_t close = text.find("](", i);
            const size_t end = close == std::string_view::npos ? close : text.find(')', close);
            if (end != std::string_view::npos &&
                text.substr(i + 1, close - i - 1).find('[') == std::string_view::npos) {
                out += markdown_inline(text.substr(i + 1, close - i - 1));
                i = end + 1;
                continue;
            }
        }
        if (c == '*') {
            // *emphasis* and **strong**: opened before a non-space, closed after one.
            const bool strong = i + 1 < text.size() && text[i + 1] == '*';
            const std::string_view mark = strong ? "**" : "*";
            const size_t from = i + mark.size();
            if (from < text.size() && text[from] != ' ' && text[from] != '*') {
                size_t end = text.find(mark, from);
                // A closing mark inside `code` is not one.
                while (end != std::string_view::npos) {
                    size_t ticks = 0;
                    for (size_t k = from; k < end; ++k) ticks += text[k] == '`';
                    if (ticks % 2 == 0 && text[end - 1] != ' ') break;
                    end = text.find(mark, end + 1);
                }
                if (end != std::string_view::npos) {
                    out += (strong ? "\\fB" : "\\fI") +
                           markdown_inline(text.substr(from, end - from)) + "\\fP";
                    i = end + mark.size();
                    continue;
                }
            }
        }
        size_t next = text.find_first_of("`[*", i + 1);
        if (next == std::string_view::npos) next = text.size();
        out += roff_escape(text.substr(i, next - i));
        i = next;
    }
    return out;
}

std::string markdown_to_roff(std::string_view markdown) {
    std::ostringstream os;
    const std::vector<std::string> lines = split_lines(markdown);
    std::vector<std::string> para;
    auto flush = [&]() {
        if (para.empty()) return;
        os << ".PP\n" << roff_lines(markdown_inline(join_lines(para)));
        para.clear();
    };
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i];
        const std::string t = trim(line);
        if (t.empty()) {
            flush();
            continue;
        }
        if (starts_with(t, "```")) {
            flush();
            os << ".PP\n.EX\n";
            while (++i < lines.size() && !starts_with(trim(lines[i]), "```"))
                os << (lines[i].empty() ? std::string("\n") : roff_lines(roff_escape(lines[i])));
            os << ".EE\n";
            continue;
        }
        if (starts_with(t, "# ")) {
            flush();
            continue;
        }
        if (starts_with(t, "## ") || starts_with(t, "### ")) {
            flush();
            const bool section = starts_with(t, "## ");
            const std::string title = trim(t.substr(section ? 3 : 4));
            std::string arg;
            for (char c : markdown_inline(section ? upper_outside_code(title) : title))
                arg += c == '"' ? std::string("\\(dq") : std::string(1, c);
            os << (section ? ".SH \"" : ".SS \"") << arg << "\"\n";
            continue;
        }
        if (starts_with(t, "- ") || starts_with(t, "* ")) {
            flush();
            // The item and the lines indented under it.
            std::vector<std::string> item{t.substr(2)};
            while (i + 1 < lines.size() && starts_with(lines[i + 1], "  ") &&
                   !trim(lines[i + 1]).empty() && !starts_with(trim(lines[i + 1]), "- "))
                item.push_back(lines[++i]);
            os << ".IP \\(bu 2\n" << roff_lines(markdown_inline(join_lines(item)));
            continue;
        }
        if (t.front() == '|' && i + 1 < lines.size() && is_table_rule(lines[i + 1])) {
            flush();
            // A man page is read at any width, where a table of long notes would not
            // fit: each row becomes its first cell as a tag, then the others, named by
            // their column's heading when there are more than two.
            const std::vector<std::string> head = table_cells(t);
            ++i;
            while (i + 1 < lines.size() && trim(lines[i + 1]).size() > 0 &&
                   trim(lines[i + 1]).front() == '|') {
                const std::vector<std::string> cells = table_cells(lines[++i]);
                os << ".TP\n" << roff_lines(markdown_inline(cells.empty() ? "" : cells[0]));
                for (size_t c = 1; c < cells.size(); ++c) {
                    if (c > 1) os << ".br\n";
                    std::string text = markdown_inline(cells[c]);
                    if (head.size() > 2 && c < head.size())
                        text = "\\fI" + markdown_inline(head[c]) + "\\fP: " + text;
                    os << roff_lines(text);
                }
            }
            continue;
        }
        para.push_back(line);
    }
    flush();
    return os.str();
}

}  // namespace agentjail::cli::gen

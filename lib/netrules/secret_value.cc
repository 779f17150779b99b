// SPDX-License-Identifier: Apache-2.0
// A secret's value from its source (netrules/secret_value.hpp): the dotenv and JSON
// readings and the checks of a value, pure; the file is read by the caller's reader.
#include "netrules/secret_value.hpp"

#include <nlohmann/json.hpp>

#include <map>

namespace agentjail::net {

namespace {

using base::wstring;
using wjson = nlohmann::basic_json<std::map, std::vector, wstring, bool, std::int64_t,
                                   std::uint64_t, double, base::Wiping>;
using Wipe = base::WipeOnExit<wstring>;

// A header value cannot hold a line break (it would add headers) or a NUL.
std::string check_value(std::string_view v) {
    if (v.empty()) return "the value is empty";
    if (v.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos)
        return "the value holds a line break or NUL (a secret is one line)";
    return {};
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

// dotenv (see the header): each KEY=VALUE line in order, with its value and what is
// wrong with the line ("" when nothing). The one reader of dotenv text: the proxy's
// value and the sandbox's view of a .env (lib/plan/dotenv.cc) see the same keys.
template <class Fn>
void dotenv_walk(std::string_view text, Fn&& fn) {
    std::size_t i = 0, line = 1;
    const std::size_t n = text.size();
    while (i < n) {
        std::size_t line_no = line;
        auto eol = [&](std::size_t from) {
            std::size_t e = text.find('\n', from);
            return e == std::string_view::npos ? n : e;
        };
        auto skip_line = [&]() {
            std::size_t e = eol(i);
            i = e < n ? e + 1 : n;
            ++line;
        };
        while (i < n && is_space(text[i])) ++i;
        if (i >= n) break;
        if (text[i] == '\n' || text[i] == '\r' || text[i] == '#') {
            skip_line();
            continue;
        }
        if (text.compare(i, 6, "export") == 0 && i + 6 < n && is_space(text[i + 6])) {
            i += 6;
            while (i < n && is_space(text[i])) ++i;
        }
        std::size_t ks = i;
        while (i < n && dotenv_key_char(text[i])) ++i;
        std::string_view k = text.substr(ks, i - ks);
        while (i < n && is_space(text[i])) ++i;
        if (k.empty() || i >= n || text[i] != '=') {
            skip_line();  // not KEY=VALUE: ignored, as dotenv libraries do
            continue;
        }
        ++i;
        while (i < n && is_space(text[i])) ++i;
        wstring value;
        std::string why;
        if (i < n && (text[i] == '\'' || text[i] == '"' || text[i] == '`')) {
            char q = text[i++];
            bool closed = false;
            while (i < n) {
                char c = text[i];
                if (c == '\n') ++line;
                if (c == q) {
                    closed = true;
                    ++i;
                    break;
                }
                if (q == '"' && c == '\\' && i + 1 < n) {
                    char e = text[i + 1];
                    i += 2;
                    switch (e) {
                    case 'n': value += '\n'; break;
                    case 'r': value += '\r'; break;
                    case 't': value += '\t'; break;
                    default: value += e; break;  // \" \\ and anything else as itself
                    }
                    continue;
                }
                value += c;
                ++i;
            }
            if (!closed) why = "line " + std::to_string(line_no) + ": the quote is never closed";
            // After the closing quote: spaces and an optional comment only.
            std::size_t e = eol(i);
            std::string_view rest = text.substr(i, e - i);
            std::size_t r = 0;
            while (r < rest.size() && (is_space(rest[r]) || rest[r] == '\r')) ++r;
            if (why.empty() && r < rest.size() && rest[r] != '#')
                why = "line " + std::to_string(line_no) + ": text after the closing quote";
            i = e < n ? e + 1 : n;
            ++line;
        } else {
            std::size_t e = eol(i);
            std::string_view v = text.substr(i, e - i);
            // An inline comment starts at a '#' after whitespace.
            for (std::size_t h = 1; h < v.size(); ++h)
                if (v[h] == '#' && is_space(v[h - 1])) {
                    v = v.substr(0, h);
                    break;
                }
            while (!v.empty() && (is_space(v.back()) || v.back() == '\r')) v.remove_suffix(1);
            value.assign(v.data(), v.size());
            i = e < n ? e + 1 : n;
            ++line;
        }
        fn(k, value, why);
        if (!value.empty()) base::wipe(value.data(), value.size());
    }
}

// Returns "" and sets out when found.
std::string dotenv_find(std::string_view text, std::string_view key, wstring& out) {
    bool found = false;
    std::string problem;  // of the last line that set key
    dotenv_walk(text, [&](std::string_view k, const wstring& value, const std::string& why) {
        if (k != key) return;
        found = true;
        problem = why;
        if (problem.empty()) {
            std::string bad = check_value(value);
            if (!bad.empty()) problem = std::string(key) + ": " + bad;
        }
        out = value;
    });
    if (!found) return "no " + std::string(key) + "= line";
    return problem;
}

// The node at a dotted path, or null.
const wjson* at_path(const wjson& root, std::string_view path) {
    const wjson* cur = &root;
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t dot = path.find('.', start);
        if (dot == std::string_view::npos) dot = path.size();
        std::string_view seg = path.substr(start, dot - start);
        if (cur->is_object()) {
            auto it = cur->find(wstring(seg.data(), seg.size()));
            if (it == cur->end()) return nullptr;
            cur = &*it;
        } else if (cur->is_array()) {
            std::size_t idx = 0;
            if (seg.empty() || seg.size() > 9) return nullptr;
            for (char c : seg) {
                if (c < '0' || c > '9') return nullptr;
                idx = idx * 10 + static_cast<std::size_t>(c - '0');
            }
            if (idx >= cur->size()) return nullptr;
            cur = &(*cur)[idx];
        } else {
            return nullptr;
        }
        start = dot + 1;
    }
    return cur;
}

// The string at spec.key in the JSON file, into out; "" or why. expires: also the
// time at that path, when it is a number.
std::string json_find(const SourceSpec& spec, const FileReader& read_file, wstring& out,
                      const std::string& expires, std::optional<double>* expires_at) {
    wstring text;
    Wipe wipe_text{text};
    if (std::string why = read_file(spec.where, text); !why.empty()) return why;
    // No exceptions: a parse error's message quotes the text around it, which may
    // be the token.
    wjson doc = wjson::parse(text.begin(), text.end(), nullptr, false);
    if (doc.is_discarded()) return spec.where + ": not valid JSON";
    const wjson* v = at_path(doc, spec.key);
    if (v == nullptr) return spec.where + ": no field " + spec.key;
    if (!v->is_string()) return spec.where + ": " + spec.key + " is not a string";
    const wstring& s = v->get_ref<const wstring&>();
    if (std::string bad = check_value(s); !bad.empty())
        return spec.where + ": " + spec.key + ": " + bad;
    out = s;
    if (!expires.empty() && expires_at != nullptr) {
        const wjson* e = at_path(doc, expires);
        if (e != nullptr && e->is_number()) {
            double t = e->get<double>();
            // Milliseconds when it could not be seconds: 1e11 s is the year 5138.
            if (t > 1e11) t /= 1000;
            *expires_at = t;
        }
    }
    return {};
}

}  // namespace

std::vector<DotenvKey> dotenv_keys(std::string_view text) {
    std::vector<DotenvKey> out;
    dotenv_walk(text, [&](std::string_view k, const wstring& value, const std::string& why) {
        bool usable = why.empty() && check_value(value).empty();
        for (auto& o : out)
            if (o.key == k) {
                o.value = usable;  // the last line of a key wins
                return;
            }
        out.push_back({std::string(k), usable});
    });
    return out;
}

std::optional<std::string> dotenv_value(std::string_view text, std::string_view key,
                                        std::string* why) {
    wstring v;
    Wipe wipe{v};
    std::string problem = dotenv_find(text, key, v);
    if (!problem.empty()) {
        if (why != nullptr) *why = problem;
        return std::nullopt;
    }
    return std::string(v.data(), v.size());
}

SourceProbe find_source(const SourceSpec& spec, const std::string& secret_name, const EnvLookup& env,
                        const FileReader& read_file, const std::string& expires, base::wstring* value) {
    SourceProbe p;
    wstring v;
    Wipe wipe{v};
    switch (spec.kind) {
    case SourceSpec::Kind::env: {
        if (!env(spec.where, v) || v.empty()) {
            p.why = "$" + spec.where + " is not set";
            p.unset = true;
        } else {
            p.why = check_value(v);
            if (!p.why.empty()) p.why = "$" + spec.where + ": " + p.why;
        }
        break;
    }
    case SourceSpec::Kind::file: {
        p.why = read_file(spec.where, v);
        if (p.why.empty()) {
            while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
            p.why = check_value(v);
            if (!p.why.empty()) p.why = spec.where + ": " + p.why;
        }
        break;
    }
    case SourceSpec::Kind::dotenv: {
        wstring text;
        Wipe wipe_text{text};
        p.why = read_file(spec.where, text);
        if (p.why.empty()) {
            p.why = dotenv_find(text, spec.key.empty() ? secret_name : spec.key, v);
            if (!p.why.empty()) p.why = spec.where + ": " + p.why;
        }
        break;
    }
    case SourceSpec::Kind::json: p.why = json_find(spec, read_file, v, expires, &p.expires_at); break;
    }
    p.available = p.why.empty();
    if (p.available && value != nullptr) *value = v;
    return p;
}

EnvLookup environ_lines(const std::vector<std::string>& environ) {
    return [&environ](const std::string& name, base::wstring& out) {
        for (const auto& e : environ)
            if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
                out.assign(e.data() + name.size() + 1, e.size() - name.size() - 1);
                return true;
            }
        return false;
    };
}

}  // namespace agentjail::net

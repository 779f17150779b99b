// SPDX-License-Identifier: Apache-2.0
// Secret sources (see secret_source.hpp). Files are read into buffers whose
// allocator wipes them (OPENSSL_cleanse) before freeing, and JSON is parsed into a
// document built on the same allocator: the check at plan time sees the value but
// leaves none of it behind in the heap a sandbox is cloned from.
#include "net/secret_source.hpp"

#include "sys/fd.hpp"
#include "util/strings.hpp"

#include <openssl/crypto.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>

namespace agentjail::net {

namespace {

template <class T>
struct Wiping {
    using value_type = T;
    Wiping() = default;
    template <class U>
    Wiping(const Wiping<U>&) noexcept {}  // NOLINT: converting, as allocators are
    T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
    void deallocate(T* p, std::size_t n) noexcept {
        OPENSSL_cleanse(p, n * sizeof(T));
        std::allocator<T>().deallocate(p, n);
    }
    template <class U>
    bool operator==(const Wiping<U>&) const noexcept {
        return true;
    }
    template <class U>
    bool operator!=(const Wiping<U>&) const noexcept {
        return false;
    }
};

using wstring = std::basic_string<char, std::char_traits<char>, Wiping<char>>;
using wjson = nlohmann::basic_json<std::map, std::vector, wstring, bool, std::int64_t,
                                   std::uint64_t, double, Wiping>;

// Wipes a short string's inline buffer too, which the allocator never sees.
struct WipeOnExit {
    wstring& s;
    ~WipeOnExit() {
        if (!s.empty()) OPENSSL_cleanse(s.data(), s.size());
    }
};

constexpr std::size_t kMaxFile = 1 << 20;

// Reads a small regular file (never a FIFO or a device: O_NONBLOCK and the type
// check), into a wiping buffer. "" on success, else why.
std::string read_file(const std::string& path, wstring& out) {
    sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (!fd) return path + ": " + util::errno_text(errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return path + ": " + util::errno_text(errno);
    if (!S_ISREG(st.st_mode)) return path + ": not a regular file";
    if (static_cast<std::size_t>(st.st_size) > kMaxFile) return path + ": larger than 1 MiB";
    out.reserve(static_cast<std::size_t>(st.st_size) + 1);
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int err = errno;
            OPENSSL_cleanse(buf, sizeof buf);
            return path + ": " + util::errno_text(err);
        }
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > kMaxFile) {
            OPENSSL_cleanse(buf, sizeof buf);
            return path + ": larger than 1 MiB";
        }
    }
    OPENSSL_cleanse(buf, sizeof buf);
    return {};
}

// A header value cannot hold a line break (it would add headers) or a NUL.
std::string check_value(std::string_view v) {
    if (v.empty()) return "the value is empty";
    if (v.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos)
        return "the value holds a line break or NUL (a secret is one line)";
    return {};
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

// dotenv (see the header). Returns "" and sets out when found.
std::string dotenv_find(std::string_view text, std::string_view key, wstring& out) {
    std::size_t i = 0, line = 1;
    bool found = false;
    std::string problem;  // of the last line that set key
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
        bool mine = k == key;
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
        if (!mine) continue;
        found = true;
        problem = why;
        if (problem.empty()) {
            std::string bad = check_value(value);
            if (!bad.empty()) problem = std::string(key) + ": " + bad;
        }
        out = value;
        if (!value.empty()) OPENSSL_cleanse(value.data(), value.size());
    }
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
std::string json_find(const SourceSpec& spec, wstring& out, const std::string& expires,
                      std::optional<double>* expires_at) {
    wstring text;
    WipeOnExit wipe_text{text};
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

std::optional<std::string> env_in(const std::vector<std::string>& environ,
                                  const std::string& name) {
    for (const auto& e : environ)
        if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=')
            return e.substr(name.size() + 1);
    return std::nullopt;
}

}  // namespace

std::optional<std::string> dotenv_value(std::string_view text, std::string_view key,
                                        std::string* why) {
    wstring v;
    WipeOnExit wipe{v};
    std::string problem = dotenv_find(text, key, v);
    if (!problem.empty()) {
        if (why != nullptr) *why = problem;
        return std::nullopt;
    }
    return std::string(v.data(), v.size());
}

SourceProbe probe_source(const SourceSpec& spec, const std::string& secret_name,
                         const std::vector<std::string>& environ, const std::string& expires) {
    SourceProbe p;
    wstring v;
    WipeOnExit wipe{v};
    switch (spec.kind) {
    case SourceSpec::Kind::env: {
        auto e = env_in(environ, spec.where);
        if (!e || e->empty()) {
            p.why = "$" + spec.where + " is not set";
        } else {
            p.why = check_value(*e);
            if (!p.why.empty()) p.why = "$" + spec.where + ": " + p.why;
        }
        if (e && !e->empty()) OPENSSL_cleanse(e->data(), e->size());
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
        WipeOnExit wipe_text{text};
        p.why = read_file(spec.where, text);
        if (p.why.empty()) {
            p.why = dotenv_find(text, spec.key.empty() ? secret_name : spec.key, v);
            if (!p.why.empty()) p.why = spec.where + ": " + p.why;
        }
        break;
    }
    case SourceSpec::Kind::json: p.why = json_find(spec, v, expires, &p.expires_at); break;
    }
    p.available = p.why.empty();
    return p;
}

Result<std::string> read_source(const SourceSpec& spec, const std::string& secret_name) {
    auto fail = [&](const std::string& why) {
        return Error(ErrorKind::invalid_input, EINVAL,
                     "secret " + secret_name + " (" + source_text(spec) + "): " + why);
    };
    wstring v;
    WipeOnExit wipe{v};
    std::string why;
    switch (spec.kind) {
    case SourceSpec::Kind::env: {
        const char* e = ::getenv(spec.where.c_str());
        if (e == nullptr || *e == '\0') return fail("the variable is not set");
        v = e;
        why = check_value(v);
        break;
    }
    case SourceSpec::Kind::file:
        why = read_file(spec.where, v);
        if (why.empty()) {
            while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
            why = check_value(v);
        }
        break;
    case SourceSpec::Kind::dotenv: {
        wstring text;
        WipeOnExit wipe_text{text};
        why = read_file(spec.where, text);
        if (why.empty()) why = dotenv_find(text, spec.key.empty() ? secret_name : spec.key, v);
        break;
    }
    case SourceSpec::Kind::json: why = json_find(spec, v, {}, nullptr); break;
    }
    if (!why.empty()) return fail(why);
    return std::string(v.data(), v.size());
}

}  // namespace agentjail::net

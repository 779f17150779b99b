// SPDX-License-Identifier: Apache-2.0
// Request-head parsing for the proxy. Strict on purpose: the head decides which
// host the proxy connects to, so an ambiguous one (bare LF mixed with CRLF
// obs-folds, a space before the colon, two Host headers) is a 400.
#include "net/http.hpp"

#include <algorithm>
#include <cctype>

namespace agentjail::net {

namespace {

bool is_tchar(char c) {
    if (std::isalnum(static_cast<unsigned char>(c))) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

constexpr std::string_view known_methods[] = {"GET",  "HEAD",    "POST",  "PUT",     "DELETE",
                                              "PATCH", "OPTIONS", "TRACE", "CONNECT"};

ParseResult bad(std::string why) {
    ParseResult r;
    r.status = ParseStatus::bad;
    r.error = std::move(why);
    return r;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

}  // namespace

bool split_authority(std::string_view a, std::uint16_t default_port, std::string& host, std::uint16_t& port) {
    if (a.empty()) return false;
    std::string_view h = a, p;
    bool has_port = false;
    if (a.front() == '[') {
        size_t close = a.find(']');
        if (close == std::string_view::npos) return false;
        h = a.substr(1, close - 1);
        std::string_view rest = a.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return false;
            p = rest.substr(1);
            has_port = true;
        }
        if (h.empty()) return false;
    } else {
        size_t colon = a.rfind(':');
        if (colon != std::string_view::npos) {
            // An unbracketed IPv6 address is ambiguous with a port: refused.
            if (a.find(':') != colon) return false;
            h = a.substr(0, colon);
            p = a.substr(colon + 1);
            has_port = true;
        }
        if (h.empty()) return false;
        for (char c : h)
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) return false;
    }
    if (has_port) {
        if (p.empty() || p.size() > 5 || !std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return false;
        unsigned long v = std::stoul(std::string(p));
        if (v == 0 || v > 65535) return false;
        port = static_cast<std::uint16_t>(v);
    } else {
        if (default_port == 0) return false;
        port = default_port;
    }
    host = std::string(h);
    return true;
}

ParseResult parse_request_head(std::string_view buf) {
    size_t end = buf.find("\r\n\r\n");
    if (end == std::string_view::npos) {
        ParseResult r;
        if (buf.size() >= max_head_size) {
            r.status = ParseStatus::too_large;
            r.error = "the request head is larger than 16 KiB";
        }
        // A bare LF head ("GET ...\n\n") is never completed: reject it early instead of waiting.
        else if (buf.find("\n\n") != std::string_view::npos) {
            return bad("lines must end in CRLF");
        }
        // Neither is one that does not start with a method (TLS sent straight at
        // the proxy, a binary protocol): refused at its first bytes.
        size_t i = 0;
        for (; i < buf.size() && buf[i] != ' '; ++i)
            if (!is_tchar(buf[i]) || i >= 16) return bad("malformed request line");
        return r;
    }
    if (end + 4 > max_head_size) {
        ParseResult r;
        r.status = ParseStatus::too_large;
        r.error = "the request head is larger than 16 KiB";
        return r;
    }
    std::string_view head = buf.substr(0, end);
    ParseResult r;
    r.head_size = end + 4;
    Request& q = r.request;

    size_t eol = head.find("\r\n");
    std::string_view line = head.substr(0, eol);
    // request-line = method SP request-target SP HTTP-version, single spaces.
    size_t sp1 = line.find(' ');
    size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
        line.find(' ', sp2 + 1) != std::string_view::npos)
        return bad("malformed request line");
    q.method = std::string(line.substr(0, sp1));
    q.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
    q.version = std::string(line.substr(sp2 + 1));
    if (q.method.empty() || !std::all_of(q.method.begin(), q.method.end(), is_tchar))
        return bad("malformed method");
    if (std::find(std::begin(known_methods), std::end(known_methods), q.method) == std::end(known_methods))
        return bad("unsupported method " + q.method);
    if (q.version != "HTTP/1.1" && q.version != "HTTP/1.0") return bad("unsupported version");
    if (q.target.empty()) return bad("empty request target");
    for (char c : q.target)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return bad("control character in the target");

    // Header lines.
    size_t pos = eol == std::string_view::npos ? head.size() : eol + 2;
    int host_headers = 0;
    while (pos < head.size()) {
        size_t next = head.find("\r\n", pos);
        std::string_view h = head.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos);
        pos = next == std::string_view::npos ? head.size() : next + 2;
        if (h.empty()) return bad("empty header line");
        if (h.front() == ' ' || h.front() == '\t') return bad("obsolete header folding");
        if (h.find('\n') != std::string_view::npos || h.find('\r') != std::string_view::npos ||
            h.find('\0') != std::string_view::npos)
            return bad("stray CR, LF or NUL in a header");
        size_t colon = h.find(':');
        if (colon == std::string_view::npos || colon == 0) return bad("malformed header line");
        std::string_view name = h.substr(0, colon);
        if (!std::all_of(name.begin(), name.end(), is_tchar)) return bad("malformed header name");
        std::string_view value = trim(h.substr(colon + 1));
        if (iequals(name, "host")) ++host_headers;
        q.headers.emplace_back(std::string(name), std::string(value));
    }
    if (host_headers > 1) return bad("more than one Host header");

    if (q.method == "CONNECT") {
        q.connect = true;
        if (!split_authority(q.target, 0, q.host, q.port)) return bad("CONNECT needs host:port");
    } else {
        // Only the absolute form: a proxy gets "GET http://host/path"; an
        // origin-form "GET /path" means the client took us for the server.
        std::string_view t = q.target;
        constexpr std::string_view scheme = "http://";
        if (t.size() < scheme.size() || !iequals(t.substr(0, scheme.size()), scheme)) {
            if (t.size() >= 8 && iequals(t.substr(0, 8), "https://"))
                return bad("https:// URLs go through CONNECT (set HTTPS_PROXY)");
            return bad("expected an absolute http:// URL (this is a proxy)");
        }
        t.remove_prefix(scheme.size());
        size_t slash = t.find_first_of("/?#");
        std::string_view authority = t.substr(0, slash);
        if (authority.find('@') != std::string_view::npos) return bad("user info in the URL is not supported");
        if (!split_authority(authority, 80, q.host, q.port)) return bad("malformed host in the URL");
        q.path = slash == std::string_view::npos ? "/" : std::string(t.substr(slash));
        if (q.path.front() != '/') q.path = "/" + q.path;
        size_t hash = q.path.find('#');
        if (hash != std::string::npos) q.path.resize(hash);
    }
    r.status = ParseStatus::ok;
    return r;
}

std::string origin_form_head(const Request& r, const std::vector<std::pair<std::string, std::string>>& replace) {
    std::string out = r.method + " " + r.path + " " + r.version + "\r\n";
    std::vector<std::string> connection_tokens;
    for (const auto& [n, v] : r.headers) {
        if (iequals(n, "connection")) {
            size_t i = 0;
            while (i <= v.size()) {
                size_t c = v.find(',', i);
                if (c == std::string::npos) c = v.size();
                std::string tok(trim(std::string_view(v).substr(i, c - i)));
                if (!tok.empty()) connection_tokens.push_back(tok);
                i = c + 1;
            }
        }
    }
    for (const auto& [n, v] : r.headers) {
        // Hop-by-hop headers end at the proxy; Proxy-Authorization must never
        // travel on to the origin.
        if (n.size() >= 6 && iequals(std::string_view(n).substr(0, 6), "proxy-")) continue;
        if (iequals(n, "connection") || iequals(n, "keep-alive") || iequals(n, "te") || iequals(n, "trailer") ||
            iequals(n, "upgrade"))
            continue;
        bool listed = false;
        for (const auto& t : connection_tokens) listed = listed || iequals(n, t);
        if (listed) continue;
        // The origin gets the URL's authority as Host (RFC 9112 3.2.2): a
        // different Host header would pick another virtual host than the one checked.
        if (iequals(n, "host")) continue;
        std::string value = v;
        for (const auto& [from, to] : replace) {
            if (from.empty()) continue;
            for (size_t at = value.find(from); at != std::string::npos; at = value.find(from, at + to.size()))
                value.replace(at, from.size(), to);
        }
        out += n + ": " + value + "\r\n";
    }
    {
        bool v6 = r.host.find(':') != std::string::npos;
        std::string h = v6 ? "[" + r.host + "]" : r.host;
        if (r.port != 80) h += ":" + std::to_string(r.port);
        out += "Host: " + h + "\r\n";
    }
    out += "Connection: close\r\n\r\n";
    return out;
}

std::string simple_response(int code, std::string_view reason, std::string_view body) {
    std::string b(body);
    if (b.empty() || b.back() != '\n') b += "\n";
    return "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) +
           "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(b.size()) +
           "\r\nConnection: close\r\n\r\n" + b;
}

}  // namespace agentjail::net

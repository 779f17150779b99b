// SPDX-License-Identifier: Apache-2.0
// Request-head parsing for the proxy. Strict on purpose: the head decides which
// host the proxy connects to, so an ambiguous one (bare LF mixed with CRLF
// obs-folds, a space before the colon, two Host headers) is a 400.
#include "netrules/http.hpp"
#include "netrules/ascii.hpp"

#include "netrules/websocket.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace agentjail::net {

namespace {

bool is_tchar(char c) {
    if (std::isalnum(static_cast<unsigned char>(c))) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
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
        // Only an IPv6 address goes in brackets ("[evil.example]" is no host name a
        // parser on the way reads alike; fuzz_http_differential found it).
        in6_addr a6{};
        if (h.empty() || ::inet_pton(AF_INET6, std::string(h).c_str(), &a6) != 1) return false;
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

ParseResult parse_request_head(std::string_view buf, TargetForm form) {
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
    for (char c : q.target) {
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return bad("control character in the target");
        // RFC 3986 has no raw bytes past ASCII: servers that take them decode them in
        // ways of their own (Latin-1, UTF-8, %-encoded or not) after the check here.
        if (static_cast<unsigned char>(c) >= 0x80)
            return bad("a byte outside ASCII in the target (percent-encode it)");
    }

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
        // CGI-style servers read '_' as '-': a Content_Length the proxy ignores would
        // frame the body there, and the proxy's next (checked) request with it.
        if (name.find('_') != std::string_view::npos) {
            std::string dashed(name);
            std::replace(dashed.begin(), dashed.end(), '_', '-');
            if (iequals(dashed, "content-length") || iequals(dashed, "transfer-encoding"))
                return bad("a framing header spelt with '_'");
        }
        // Nor a name that only begins like one ("Transfer-Encodingx"): parsers that
        // match header names by prefix take it for the framing header (http_parser
        // half does, and refuses the head; fuzz_http_differential found it).
        for (std::string_view framing :
             {std::string_view("content-length"), std::string_view("transfer-encoding")})
            if (name.size() > framing.size() && iequals(name.substr(0, framing.size()), framing))
                return bad("a header name that begins like " + std::string(framing));
        std::string_view value = trim(h.substr(colon + 1));
        // A tab around a framing header's value is whitespace to RFC 9110, but an
        // error (Content-Length) or another coding ("chunked<TAB>" is not chunked) to
        // http_parser: refused, so that every parser on the way frames the body alike.
        if (iequals(name, "content-length") && h.find('\t', colon) != std::string_view::npos)
            return bad("a tab in Content-Length");
        if (iequals(name, "transfer-encoding") && h.find('\t', colon) != std::string_view::npos)
            return bad("a tab in Transfer-Encoding");
        // No control character but HTAB in a value (RFC 9110 5.5): what the proxy
        // forwards must be a value every parser on the way reads alike.
        for (char c : value)
            if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f)
                return bad("control character in the value of " + std::string(name));
        if (iequals(name, "host")) ++host_headers;
        q.headers.emplace_back(std::string(name), std::string(value));
    }
    if (host_headers > 1) return bad("more than one Host header");

    if (q.method == "CONNECT") {
        q.connect = true;
        if (!split_authority(q.target, 0, q.host, q.port)) return bad("CONNECT needs host:port");
        // What follows is the tunnel's, whatever its framing headers say; still, a
        // head whose framing another parser refuses (a Content-Length of "+", two of
        // them) is refused here too (fuzz_http_differential found the first).
        Body ignored;
        std::string why;
        if (!request_body(q, ignored, why)) return bad(why);
    } else if (form == TargetForm::origin) {
        // Inside an intercepted tunnel: "GET /path" with the Host header naming the
        // host (which the caller compares with the tunnel's, so Host cannot pick
        // another virtual host than the one that was checked).
        if (q.target.front() != '/') return bad("expected an origin-form target (/path) inside the tunnel");
        const std::string* h = find_header(q.headers, "host");
        if (!h) return bad("no Host header");
        if (!split_authority(*h, 443, q.host, q.port)) return bad("malformed Host header");
        q.path = q.target;
        size_t hash = q.path.find('#');
        if (hash != std::string::npos) q.path.resize(hash);
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
        // "http://a#b/": a fragment where the path should start is no request target
        // (RFC 9112 3.2), and a parser that reads "a#b" as the host would connect
        // elsewhere than the one checked (fuzz_http_differential found it).
        if (slash != std::string_view::npos && t[slash] == '#')
            return bad("a fragment (#) right after the host");
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

namespace {

// The header names a request's Connection headers list (hop-by-hop by RFC 9110 7.6.1).
std::vector<std::string> connection_tokens(const Request& r) {
    std::vector<std::string> out;
    for (const auto& [n, v] : r.headers) {
        if (!iequals(n, "connection")) continue;
        size_t i = 0;
        while (i <= v.size()) {
            size_t c = v.find(',', i);
            if (c == std::string::npos) c = v.size();
            std::string tok(trim(std::string_view(v).substr(i, c - i)));
            if (!tok.empty()) out.push_back(tok);
            i = c + 1;
        }
    }
    return out;
}

// Whether header n is one the Connection header names (hop-by-hop, dropped). Never
// the framing headers: dropping those would turn the body the proxy read into a
// request of its own at the origin (smuggling).
bool listed_hop(const std::string& n, const std::vector<std::string>& listed) {
    if (iequals(n, "content-length") || iequals(n, "transfer-encoding")) return false;
    for (const auto& t : listed)
        if (iequals(n, t)) return true;
    return false;
}

}  // namespace

std::string origin_form_head(const Request& r) {
    std::string out = r.method + " " + r.path + " " + r.version + "\r\n";
    const std::vector<std::string> listed = connection_tokens(r);
    for (const auto& [n, v] : r.headers) {
        // Hop-by-hop headers end at the proxy; Proxy-Authorization must never
        // travel on to the origin.
        if (n.size() >= 6 && iequals(std::string_view(n).substr(0, 6), "proxy-")) continue;
        if (iequals(n, "connection") || iequals(n, "keep-alive") || iequals(n, "te") || iequals(n, "trailer") ||
            iequals(n, "upgrade"))
            continue;
        if (listed_hop(n, listed)) continue;
        // The origin gets the URL's authority as Host (RFC 9112 3.2.2): a
        // different Host header would pick another virtual host than the one checked.
        if (iequals(n, "host")) continue;
        out += n + ": " + v + "\r\n";
    }
    {
        bool v6 = r.host.find(':') != std::string::npos;
        std::string h = v6 ? "[" + r.host + "]" : r.host;
        if (r.port != 80) h += ":" + std::to_string(r.port);
        out += "Host: " + h + "\r\n";
    }
    // A WebSocket handshake keeps its Upgrade (the rest of this connection is relayed
    // as it is anyway); any other Upgrade (h2c) was dropped above.
    if (websocket_upgrade(r))
        out += "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
    else
        out += "Connection: close\r\n\r\n";
    return out;
}

const std::string* find_header(const std::vector<std::pair<std::string, std::string>>& headers,
                               std::string_view name) {
    for (const auto& [n, v] : headers)
        if (iequals(n, name)) return &v;
    return nullptr;
}

bool header_has_token(const std::vector<std::pair<std::string, std::string>>& headers, std::string_view name,
                      std::string_view token) {
    for (const auto& [n, v] : headers) {
        if (!iequals(n, name)) continue;
        size_t i = 0;
        while (i <= v.size()) {
            size_t c = v.find(',', i);
            if (c == std::string::npos) c = v.size();
            if (iequals(trim(std::string_view(v).substr(i, c - i)), token)) return true;
            i = c + 1;
        }
    }
    return false;
}

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool unreserved(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' || c == '~';
}

// The framing headers of a message: Content-Length (all equal) and Transfer-Encoding.
bool framing_headers(const std::vector<std::pair<std::string, std::string>>& headers, Body& body, std::string& why) {
    bool have_length = false, have_te = false;
    std::uint64_t length = 0;
    for (const auto& [n, v] : headers) {
        if (iequals(n, "content-length")) {
            if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
                why = "malformed Content-Length";
                return false;
            }
            std::uint64_t l = std::stoull(v);
            if (have_length && l != length) {
                why = "two different Content-Length headers";
                return false;
            }
            have_length = true;
            length = l;
        } else if (iequals(n, "transfer-encoding")) {
            // Only "chunked" alone: a list ("gzip, chunked") or an unknown coding is
            // where proxies and servers disagree about where a message ends.
            if (have_te || !iequals(trim(v), "chunked")) {
                why = "unsupported Transfer-Encoding '" + v + "'";
                return false;
            }
            have_te = true;
        }
    }
    if (have_te && have_length) {
        why = "both Transfer-Encoding and Content-Length";
        return false;
    }
    if (have_te) body.framing = Framing::chunked;
    else if (have_length) {
        body.framing = length ? Framing::length : Framing::none;
        body.length = length;
    } else {
        body.framing = Framing::until_close;
    }
    return true;
}

}  // namespace

bool normalize_path(std::string_view target, std::string& path, std::string& query, std::string& why) {
    size_t q = target.find('?');
    std::string_view raw = target.substr(0, q);
    query = q == std::string_view::npos ? "" : std::string(target.substr(q));
    if (raw.empty() || raw.front() != '/') {
        why = "the path does not start with '/'";
        return false;
    }
    path.clear();
    for (size_t i = 0; i < raw.size(); ++i) {
        char c = raw[i];
        if (c == '\\') {
            why = "a backslash in the path";
            return false;
        }
        if (c != '%') {
            path += c;
            continue;
        }
        int hi = i + 2 < raw.size() ? hex_value(raw[i + 1]) : -1;
        int lo = hi >= 0 ? hex_value(raw[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            why = "a malformed %-escape in the path";
            return false;
        }
        char d = static_cast<char>(hi * 16 + lo);
        if (d == '\0' || d == '\\') {
            why = "an encoded NUL or backslash in the path";
            return false;
        }
        if (unreserved(d)) {
            path += d;
        } else {
            static const char digits[] = "0123456789ABCDEF";
            path += '%';
            path += digits[hi];
            path += digits[lo];
        }
        i += 2;
    }
    // Dot segments: "/a/../b" reaches /b at most servers, and /a at a few.
    size_t start = 0;
    while (start < path.size()) {
        size_t slash = path.find('/', start + 1);
        std::string_view seg = std::string_view(path).substr(start + 1, (slash == std::string::npos ? path.size() : slash) - start - 1);
        // Servers differ on what a segment is: Tomcat cuts ";params" ("..;" is ".."),
        // some decode %2F before they remove dot segments. A dot segment under any of
        // those readings is refused, and so is an empty one ("//", merged by nginx).
        if (seg.empty() && slash != std::string::npos) {
            why = "an empty segment (//) in the path";
            return false;
        }
        std::string_view bare = seg.substr(0, seg.find(';'));
        bool dots = seg == "." || seg == ".." || bare == "." || bare == "..";
        for (size_t at = 0; !dots && at <= bare.size();) {
            size_t enc = bare.find("%2F", at);
            std::string_view piece = bare.substr(at, enc == std::string_view::npos ? std::string_view::npos : enc - at);
            dots = piece == "." || piece == "..";
            if (enc == std::string_view::npos) break;
            at = enc + 3;
        }
        if (dots) {
            why = "a dot segment in the path";
            return false;
        }
        if (slash == std::string::npos) break;
        start = slash;
    }
    return true;
}

bool request_body(const Request& r, Body& body, std::string& why) {
    // A repeated Content-Length, even with the same value, is one a server may refuse
    // or merge (RFC 9110 8.6): the proxy refuses it, so that no two parsers on the
    // way disagree about it. (Responses keep the lenient reading: upstreams send it.)
    int lengths = 0;
    for (const auto& h : r.headers) lengths += iequals(h.first, "content-length") ? 1 : 0;
    if (lengths > 1) {
        why = "more than one Content-Length header";
        return false;
    }
    if (!framing_headers(r.headers, body, why)) return false;
    // A request without framing headers has no body (it is never read to the end of the connection).
    if (body.framing == Framing::until_close) body.framing = Framing::none;
    return true;
}

ResponseParse parse_response_head(std::string_view buf) {
    ResponseParse r;
    size_t end = buf.find("\r\n\r\n");
    if (end == std::string_view::npos) {
        if (buf.size() >= max_head_size) {
            r.status = ParseStatus::too_large;
            r.error = "the response head is larger than 16 KiB";
        }
        return r;
    }
    if (end + 4 > max_head_size) {
        r.status = ParseStatus::too_large;
        r.error = "the response head is larger than 16 KiB";
        return r;
    }
    r.head_size = end + 4;
    std::string_view head = buf.substr(0, end);
    size_t eol = head.find("\r\n");
    std::string_view line = head.substr(0, eol);
    auto fail = [&](std::string why) {
        r.status = ParseStatus::bad;
        r.error = std::move(why);
        return r;
    };
    if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ' ||
        !std::all_of(line.begin() + 9, line.begin() + 12, [](char c) { return c >= '0' && c <= '9'; }) ||
        (line.size() > 12 && line[12] != ' '))
        return fail("malformed status line");
    r.response.version = std::string(line.substr(0, 8));
    r.response.status = std::stoi(std::string(line.substr(9, 3)));
    size_t pos = eol == std::string_view::npos ? head.size() : eol + 2;
    while (pos < head.size()) {
        size_t next = head.find("\r\n", pos);
        std::string_view h = head.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos);
        pos = next == std::string_view::npos ? head.size() : next + 2;
        size_t colon = h.find(':');
        if (h.empty() || h.front() == ' ' || h.front() == '\t' || colon == std::string_view::npos || colon == 0 ||
            h.find('\n') != std::string_view::npos || h.find('\r') != std::string_view::npos)
            return fail("malformed header line in the response");
        r.response.headers.emplace_back(std::string(h.substr(0, colon)), std::string(trim(h.substr(colon + 1))));
    }
    r.status = ParseStatus::ok;
    return r;
}

bool response_body(const Response& r, std::string_view method, Body& body, std::string& why) {
    if (method == "HEAD" || (r.status >= 100 && r.status < 200) || r.status == 204 || r.status == 304) {
        body = Body{};
        return true;
    }
    return framing_headers(r.headers, body, why);
}

std::string exchange_head(const Request& r, std::string_view path, std::string_view host,
                          std::uint16_t port, std::uint16_t default_port, bool keep_alive,
                          const std::vector<SecretUse>& secrets, bool websocket) {
    std::string out = r.method + " " + std::string(path) + " " + r.version + "\r\n";
    const std::vector<std::string> listed = connection_tokens(r);
    for (const auto& [n, v] : r.headers) {
        if (n.size() >= 6 && iequals(std::string_view(n).substr(0, 6), "proxy-")) continue;
        // Upgrade: only a WebSocket handshake may switch protocols (its Upgrade is
        // written below); any other (h2c above all) would turn the connection into a
        // stream the proxy cannot check, so it is dropped and the request stays HTTP/1.1.
        // Expect: the proxy answers "100 Continue" itself and sends the body after.
        if (iequals(n, "connection") || iequals(n, "keep-alive") || iequals(n, "te") || iequals(n, "trailer") ||
            iequals(n, "upgrade") || iequals(n, "expect") || iequals(n, "host") || iequals(n, "http2-settings"))
            continue;
        if (listed_hop(n, listed)) continue;
        // Compressed bodies would hide an echoed value from the redactor, and so
        // would compressed WebSocket frames (permessage-deflate): with a secret
        // bound, neither is offered.
        if (!secrets.empty() && iequals(n, "accept-encoding")) continue;
        if (websocket && !secrets.empty() && iequals(n, "sec-websocket-extensions")) continue;
        out += n + ": " + put_secrets(n, v, secrets) + "\r\n";
    }
    if (!secrets.empty()) out += "Accept-Encoding: identity\r\n";
    bool v6 = host.find(':') != std::string_view::npos;
    std::string h = v6 ? "[" + std::string(host) + "]" : std::string(host);
    if (port != default_port) h += ":" + std::to_string(port);
    out += "Host: " + h + "\r\n";
    if (websocket)
        out += "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
    else
        out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    return out;
}

std::string simple_response(int code, std::string_view reason, std::string_view body, std::string_view error) {
    std::string b(body);
    if (b.empty() || b.back() != '\n') b += "\n";
    std::string header = error.empty() ? std::string() : "\r\nX-Agentjail-Error: " + std::string(error);
    return "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) +
           "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(b.size()) + header +
           "\r\nConnection: close\r\n\r\n" + b;
}

}  // namespace agentjail::net

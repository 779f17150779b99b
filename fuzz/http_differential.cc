// SPDX-License-Identifier: Apache-2.0
// The proxy's request-head parser against http_parser (libhttp-parser, the parser
// Node.js used before llhttp), in both target forms. Invariant: a head ours accepts
// (parse_request_head and request_body) is one http_parser in strict mode accepts
// too, with the same method, target, version, headers, authority and framing, and
// ending at the same byte: where the two differ, ours must be the stricter, since a
// head two parsers read differently is how requests are smuggled past a proxy.
//
// Debian builds the library with HTTP_PARSER_STRICT=0 (the upstream Makefile's
// library build); the few checks strict mode adds, for what a head may hold (no
// space in a header name, no byte >= 0x80, TAB or FF in the target), are applied
// here to what it reported. Before the first input, controls show that ordinary
// requests pass both (so the target is not passing because nothing is accepted)
// and that the comparison notices a difference.
#include "fuzz.hpp"

#include "netrules/http.hpp"

#include <http_parser.h>

#include <climits>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace agentjail::net;

// What http_parser made of a buffer, up to the end of the head.
struct Theirs {
    bool complete = false;  // on_headers_complete was reached without an error
    size_t head_size = 0;
    std::string method, url, version, error;
    std::vector<std::pair<std::string, std::string>> headers;
    bool chunked = false, upgrade = false;
    std::uint64_t content_length = ULLONG_MAX;  // ULLONG_MAX: no Content-Length
    bool in_name = false;                       // the last callback was a header name's
};

int on_url(http_parser* p, const char* at, size_t n) {
    static_cast<Theirs*>(p->data)->url.append(at, n);
    return 0;
}
int on_field(http_parser* p, const char* at, size_t n) {
    auto* t = static_cast<Theirs*>(p->data);
    // A name comes in pieces only across calls to execute; a value (an empty one is
    // a call with no bytes) ends it.
    if (!t->in_name) t->headers.emplace_back();
    t->in_name = true;
    t->headers.back().first.append(at, n);
    return 0;
}
int on_value(http_parser* p, const char* at, size_t n) {
    auto* t = static_cast<Theirs*>(p->data);
    if (t->headers.empty()) return 1;
    t->in_name = false;
    t->headers.back().second.append(at, n);
    return 0;
}
int on_headers_complete(http_parser* p) {
    auto* t = static_cast<Theirs*>(p->data);
    t->complete = true;
    t->chunked = (p->flags & F_CHUNKED) != 0;
    t->content_length = p->content_length;
    t->method = http_method_str(static_cast<http_method>(p->method));
    t->version = "HTTP/" + std::to_string(p->http_major) + "." + std::to_string(p->http_minor);
    // Stop here: execute() then returns the offset of the head's last LF.
    http_parser_pause(p, 1);
    return 0;
}

// The checks HTTP_PARSER_STRICT=1 adds to a request head (http_parser.c: TOKEN()
// without ' ', IS_URL_CHAR() without bytes >= 0x80, TAB and FF refused in a URL).
std::string strict_only(const Theirs& t) {
    for (unsigned char c : t.url)
        if (c >= 0x80 || c == '\t' || c == '\f')
            return "strict mode refuses byte " + std::to_string(c) + " in the URL";
    for (const auto& h : t.headers)
        if (h.first.find(' ') != std::string::npos)
            return "strict mode refuses a space in a header name";
    return {};
}

Theirs theirs(std::string_view buf) {
    static const http_parser_settings settings = [] {
        http_parser_settings s;
        http_parser_settings_init(&s);
        s.on_url = on_url;
        s.on_header_field = on_field;
        s.on_header_value = on_value;
        s.on_headers_complete = on_headers_complete;
        return s;
    }();
    Theirs t;
    http_parser p;
    http_parser_init(&p, HTTP_REQUEST);
    p.data = &t;
    size_t n = http_parser_execute(&p, &settings, buf.data(), buf.size());
    const auto err = static_cast<http_errno>(p.http_errno);
    if (!t.complete || err != HPE_PAUSED) {
        t.complete = false;
        t.error = http_errno_name(err);
        return t;
    }
    t.head_size = n + 1;
    t.upgrade = p.upgrade != 0;
    if (std::string why = strict_only(t); !why.empty()) {
        t.complete = false;
        t.error = why;
    }
    return t;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// The authority http_parser reads in a URL (or, is_connect, in "host:port").
bool their_authority(const std::string& url, bool is_connect, std::string& host,
                     std::uint16_t& port, bool& has_port) {
    http_parser_url u;
    http_parser_url_init(&u);
    if (http_parser_parse_url(url.data(), url.size(), is_connect ? 1 : 0, &u) != 0) return false;
    if (!(u.field_set & (1 << UF_HOST))) return false;
    host = url.substr(u.field_data[UF_HOST].off, u.field_data[UF_HOST].len);
    has_port = (u.field_set & (1 << UF_PORT)) != 0;
    port = u.port;
    return true;
}

// "" when http_parser read the head ours accepted (r, with its body b) the same way;
// else what differs.
std::string disagreement(const ParseResult& r, const Body& b, const Theirs& t, TargetForm form) {
    const Request& q = r.request;
    if (!t.complete) return "http_parser refuses it: " + t.error;
    if (t.head_size != r.head_size)
        return "the head ends at " + std::to_string(r.head_size) + " for ours, " +
               std::to_string(t.head_size) + " for http_parser";
    if (t.method != q.method) return "method " + q.method + " against " + t.method;
    if (t.url != q.target) return "target '" + q.target + "' against '" + t.url + "'";
    if (t.version != q.version) return "version " + q.version + " against " + t.version;
    if (t.headers.size() != q.headers.size())
        return std::to_string(q.headers.size()) + " headers against " +
               std::to_string(t.headers.size());
    for (size_t i = 0; i < q.headers.size(); ++i) {
        if (t.headers[i].first != q.headers[i].first)
            return "header name '" + q.headers[i].first + "'";
        if (trim(t.headers[i].second) != trim(q.headers[i].second))
            return "the value of " + q.headers[i].first + ": '" + q.headers[i].second +
                   "' against '" + t.headers[i].second + "'";
    }
    // The body: where the next request starts is what smuggling is about. A CONNECT
    // has none: what follows its head is the tunnel's, for both (upgrade, below).
    const bool their_length = t.content_length != ULLONG_MAX && t.content_length > 0;
    if (q.connect) {
        if (!t.upgrade) return "CONNECT without an upgrade for http_parser";
    } else if ((b.framing == Framing::chunked) != t.chunked) {
        return "chunked for one of them only";
    } else if (b.framing == Framing::length && (!their_length || t.content_length != b.length)) {
        return "Content-Length " + std::to_string(b.length) + " against " +
               (their_length ? std::to_string(t.content_length) : std::string("none"));
    } else if (b.framing == Framing::none && (t.chunked || their_length)) {
        return "no body for ours only";
    } else if (b.framing == Framing::until_close) {
        return "a request body read until the connection closes";
    }
    // The authority the proxy connects to (CONNECT's target, the absolute URL's host).
    // In origin form the Host header names it, checked against the tunnel's by the caller.
    if (q.connect || form == TargetForm::absolute) {
        std::string host;
        std::uint16_t port = 0;
        bool has_port = false;
        if (!their_authority(q.target, q.connect, host, port, has_port))
            return "http_parser's URL parser refuses '" + q.target + "'";
        if (host != q.host) return "host '" + q.host + "' against '" + host + "'";
        if ((has_port ? port : 80) != q.port)
            return "port " + std::to_string(q.port) + " against " +
                   std::to_string(has_port ? port : 80);
    }
    return {};
}

// Ours; true with r and b filled when the proxy would take the head. It frames no
// CONNECT's body (proxy.cc tunnels what follows the head), so that is the head alone.
bool ours(std::string_view buf, TargetForm form, ParseResult& r, Body& b) {
    r = parse_request_head(buf, form);
    if (r.status != ParseStatus::ok) return false;
    if (r.request.connect) return true;
    std::string why;
    return request_body(r.request, b, why);
}

void check(std::string_view buf, TargetForm form) {
    ParseResult r;
    Body b;
    if (!ours(buf, form, r, b)) return;  // refused by ours: stricter is fine
    const std::string d = disagreement(r, b, theirs(buf), form);
    if (!d.empty())
        std::fprintf(stderr, "differential: ours accepts what http_parser reads otherwise: %s\n",
                     d.c_str());
    AJ_FUZZ_CHECK(d.empty());
}

// Before the first input: ordinary requests, in the forms the proxy meets, pass both
// and agree; and a head read with another Content-Length is told apart.
bool controls() {
    struct Control {
        TargetForm form;
        const char* head;
    };
    static const Control ordinary[] = {
        {TargetForm::absolute,
         "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/8\r\n\r\n"},
        {TargetForm::absolute,
         "POST http://example.com:8080/api?x=1 HTTP/1.1\r\nHost: example.com:8080\r\n"
         "Content-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}"},
        {TargetForm::absolute,
         "PUT http://[::1]:81/x HTTP/1.0\r\nTransfer-Encoding: "
         "chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"},
        {TargetForm::absolute,
         "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n"},
        {TargetForm::origin,
         "GET /v1/models HTTP/1.1\r\nHost: api.example.com\r\nX-Empty:\r\nAccept: */*\r\n\r\n"},
        {TargetForm::origin, "DELETE /a%2Fb HTTP/1.1\r\nHost: h:8443\r\nContent-Length: 0\r\n\r\n"},
    };
    for (const auto& c : ordinary) {
        ParseResult r;
        Body b;
        if (!ours(c.head, c.form, r, b)) {
            std::fprintf(stderr, "differential control: ours refuses an ordinary request: %s\n",
                         r.error.c_str());
            return false;
        }
        const std::string d = disagreement(r, b, theirs(c.head), c.form);
        if (!d.empty()) {
            std::fprintf(stderr, "differential control: an ordinary request: %s\n", d.c_str());
            return false;
        }
    }
    ParseResult r;
    Body b;
    const char* five = "POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n";
    const char* six = "POST http://a/ HTTP/1.1\r\nContent-Length: 6\r\n\r\n";
    if (!ours(five, TargetForm::absolute, r, b) ||
        disagreement(r, b, theirs(six), TargetForm::absolute).empty()) {
        std::fprintf(stderr, "differential control: a different Content-Length went unnoticed\n");
        return false;
    }
    // And the strict mode's checks, wherever the library lacks them.
    if (theirs("GET http://a/\x80 HTTP/1.1\r\n\r\n").complete ||
        theirs("GET / HTTP/1.1\r\nA B: c\r\n\r\n").complete) {
        std::fprintf(stderr, "differential control: strict mode's checks are not applied\n");
        return false;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const bool controls_pass = controls();
    AJ_FUZZ_CHECK(controls_pass);
    if (size > 2 * max_head_size) return 0;
    std::string_view buf = ajfuzz::as_text(data, size);
    check(buf, TargetForm::absolute);
    check(buf, TargetForm::origin);
    return 0;
}

// SPDX-License-Identifier: Apache-2.0
// Unit tests of lib/netrules/http: CONNECT and absolute-form requests, garbage,
// oversized heads, and the origin-form rewrite that drops Proxy-* headers.
#include "netrules/http.hpp"

#include <gtest/gtest.h>

#include <string>

namespace agentjail::net {
namespace {

TEST(NetHttp, Connect) {
    auto r = parse_request_head("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\nTLS");
    ASSERT_EQ(r.status, ParseStatus::ok) << r.error;
    EXPECT_TRUE(r.request.connect);
    EXPECT_EQ(r.request.host, "example.com");
    EXPECT_EQ(r.request.port, 443);
    EXPECT_EQ(r.head_size, std::string("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n").size());
    r = parse_request_head("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n");
    ASSERT_EQ(r.status, ParseStatus::ok) << r.error;
    EXPECT_EQ(r.request.host, "::1");
    EXPECT_EQ(r.request.port, 8443);
    EXPECT_EQ(parse_request_head("CONNECT example.com HTTP/1.1\r\n\r\n").status, ParseStatus::bad);
    EXPECT_EQ(parse_request_head("CONNECT example.com:99999 HTTP/1.1\r\n\r\n").status, ParseStatus::bad);
    EXPECT_EQ(parse_request_head("CONNECT ::1:443 HTTP/1.1\r\n\r\n").status, ParseStatus::bad);
    // A CONNECT's framing headers must be well-formed too, though none frames a body.
    EXPECT_EQ(parse_request_head("CONNECT a:443 HTTP/1.1\r\nContent-Length: +\r\n\r\n").status,
              ParseStatus::bad);
    EXPECT_EQ(parse_request_head("CONNECT a:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n").status,
              ParseStatus::ok);
    // Brackets hold an IPv6 address and nothing else.
    EXPECT_EQ(parse_request_head("CONNECT [example.com]:443 HTTP/1.1\r\n\r\n").status,
              ParseStatus::bad);
    EXPECT_EQ(parse_request_head("CONNECT [2001:rdb8::1]:443 HTTP/1.1\r\n\r\n").status,
              ParseStatus::bad);
}

TEST(NetHttp, AbsoluteForm) {
    auto r = parse_request_head("GET http://Example.com:8080/a/b?c=d#frag HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_EQ(r.status, ParseStatus::ok) << r.error;
    EXPECT_FALSE(r.request.connect);
    EXPECT_EQ(r.request.host, "Example.com");
    EXPECT_EQ(r.request.port, 8080);
    EXPECT_EQ(r.request.path, "/a/b?c=d");
    EXPECT_EQ(parse_request_head("GET http://example#com/ HTTP/1.1\r\n\r\n").status,
              ParseStatus::bad);
    r = parse_request_head("GET http://example.com HTTP/1.0\r\n\r\n");
    ASSERT_EQ(r.status, ParseStatus::ok) << r.error;
    EXPECT_EQ(r.request.port, 80);
    EXPECT_EQ(r.request.path, "/");
    r = parse_request_head("POST http://example.com?x=1 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
    ASSERT_EQ(r.status, ParseStatus::ok) << r.error;
    EXPECT_EQ(r.request.path, "/?x=1");
}

TEST(NetHttp, Incomplete) {
    EXPECT_EQ(parse_request_head("").status, ParseStatus::incomplete);
    EXPECT_EQ(parse_request_head("CONNECT example.com:443 HTTP/1.1\r\nHost: e").status, ParseStatus::incomplete);
}

TEST(NetHttp, GarbageAndUnknownMethods) {
    for (const char* s :
         {"hello\r\n\r\n", "GET / HTTP/1.1\r\n\r\n", "BREW http://pot/ HTTP/1.1\r\n\r\n",
          "GET http://a/ HTTP/2.0\r\n\r\n", "GET  http://a/ HTTP/1.1\r\n\r\n", "GET http://a/ HTTP/1.1\r\n bad\r\n\r\n",
          "GET http://a/ HTTP/1.1\r\nNo colon\r\n\r\n", "GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
          "GET http://user@a/ HTTP/1.1\r\n\r\n", "GET https://a/ HTTP/1.1\r\n\r\n", "GET http://a b/ HTTP/1.1\r\n\r\n",
          "GET http://a/ HTTP/1.1\n\n"}) {
        auto r = parse_request_head(s);
        EXPECT_EQ(r.status, ParseStatus::bad) << s;
        EXPECT_FALSE(r.error.empty()) << s;
    }
}

// What a strict HTTP parser refuses, ours refuses too (fuzz_http_differential found
// each): a control character in a header value, a raw byte past ASCII in the target.
TEST(NetHttp, ControlCharactersAndRawNonAsciiAreRefused) {
    for (const char* s :
         {"GET http://a/ HTTP/1.1\r\nX: a\x01b\r\n\r\n",
          "GET http://a/ HTTP/1.1\r\nX: a\x7f\r\n\r\n", "GET http://a/\xc3\xa9 HTTP/1.1\r\n\r\n"}) {
        auto r = parse_request_head(s);
        EXPECT_EQ(r.status, ParseStatus::bad) << s;
    }
    // The control: HTAB inside a value, and the same path percent-encoded.
    EXPECT_EQ(parse_request_head("GET http://a/ HTTP/1.1\r\nX: a\tb\r\n\r\n").status,
              ParseStatus::ok);
    EXPECT_EQ(parse_request_head("GET http://a/%C3%A9 HTTP/1.1\r\n\r\n").status, ParseStatus::ok);
}

TEST(NetHttp, BinaryIsRefusedAtOnce) {
    // A TLS ClientHello sent straight at the proxy: no need to wait for a blank line.
    EXPECT_EQ(parse_request_head(std::string("\x16\x03\x01\x02\x00\x01", 6)).status, ParseStatus::bad);
    EXPECT_EQ(parse_request_head("GETTHEREALLYLONGMETHOD").status, ParseStatus::bad);
    EXPECT_EQ(parse_request_head("CONNE").status, ParseStatus::incomplete);
}

TEST(NetHttp, OversizedHead) {
    std::string big = "GET http://a/ HTTP/1.1\r\nX: " + std::string(max_head_size, 'x');
    EXPECT_EQ(parse_request_head(big).status, ParseStatus::too_large);
    EXPECT_EQ(parse_request_head(big + "\r\n\r\n").status, ParseStatus::too_large);
}

TEST(NetHttp, OriginFormDropsProxyHeadersAndPinsHost) {
    auto r = parse_request_head(
        "GET http://example.com:8080/x HTTP/1.1\r\nHost: other.test\r\nProxy-Authorization: Basic abc\r\n"
        "Proxy-Connection: keep-alive\r\nConnection: keep-alive, X-Drop\r\nX-Drop: 1\r\nAccept: */*\r\n\r\n");
    ASSERT_EQ(r.status, ParseStatus::ok) << r.error;
    std::string head = origin_form_head(r.request);
    EXPECT_EQ(head, "GET /x HTTP/1.1\r\nAccept: */*\r\nHost: example.com:8080\r\nConnection: close\r\n\r\n");
}

// Connection may name hop-by-hop headers, but never the framing ones: dropping
// Content-Length would make the body a request of its own at the origin.
TEST(NetHttp, OriginFormKeepsFramingHeadersTheConnectionHeaderNames) {
    auto r = parse_request_head(
        "POST http://example.com/x HTTP/1.1\r\nHost: example.com\r\nConnection: Content-Length, X-Drop\r\n"
        "Content-Length: 4\r\nX-Drop: 1\r\n\r\n");
    ASSERT_EQ(r.status, ParseStatus::ok) << r.error;
    EXPECT_EQ(origin_form_head(r.request),
              "POST /x HTTP/1.1\r\nContent-Length: 4\r\nHost: example.com\r\nConnection: close\r\n\r\n");
}

TEST(NetHttp, SimpleResponse) {
    EXPECT_EQ(simple_response(403, "Forbidden", "no"),
              "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n"
              "Connection: close\r\n\r\nno\n");
}

}  // namespace
}  // namespace agentjail::net

// ---- request paths, body framing, responses (intercepted connections) -------------

namespace agentjail::net {
namespace {

TEST(NetHttpExchange, PathsAreNormalisedOrRefused) {
    std::string path, query, why;
    ASSERT_TRUE(normalize_path("/%61pi/x%2fy?q=%41", path, query, why)) << why;
    EXPECT_EQ(path, "/api/x%2Fy");
    EXPECT_EQ(query, "?q=%41");
    for (const char* bad : {"/a/../b", "/a/%2e%2e/b", "/./a", "/a\\b", "/a%5cb", "/a%00", "/a%4", "/a%zz"})
        EXPECT_FALSE(normalize_path(bad, path, query, why)) << bad;
    // Dot segments as other servers read them: ";params" cut (Tomcat), %2F decoded
    // first (some proxies), and empty segments (nginx merges "//").
    for (const char* bad : {"/x/..%2Fadmin/y", "/x/%2e%2e%2fadmin", "/pub/..;/admin/y", "/a/.;x/b", "//admin/y",
                            "/a//b", "/-/npm/v1/security/..%2F..%2Fpublish"})
        EXPECT_FALSE(normalize_path(bad, path, query, why)) << bad;
    EXPECT_TRUE(normalize_path("/a/..b/.c", path, query, why)) << why;
    EXPECT_TRUE(normalize_path("/", path, query, why)) << why;
    EXPECT_TRUE(normalize_path("/a/b/", path, query, why)) << why;
    EXPECT_TRUE(normalize_path("/a;v=1/b%2Fc", path, query, why)) << why;
}

TEST(NetHttpExchange, RequestBodiesAreFramedOneWay) {
    auto head = [](const std::string& extra) {
        auto r = parse_request_head("POST /x HTTP/1.1\r\nHost: a.test\r\n" + extra + "\r\n", TargetForm::origin);
        EXPECT_EQ(r.status, ParseStatus::ok) << r.error;
        return r.request;
    };
    Body b;
    std::string why;
    ASSERT_TRUE(request_body(head("Content-Length: 12\r\n"), b, why));
    EXPECT_EQ(b.framing, Framing::length);
    EXPECT_EQ(b.length, 12u);
    ASSERT_TRUE(request_body(head("Transfer-Encoding: chunked\r\n"), b, why));
    EXPECT_EQ(b.framing, Framing::chunked);
    ASSERT_TRUE(request_body(head(""), b, why));
    EXPECT_EQ(b.framing, Framing::none);
    EXPECT_FALSE(request_body(head("Content-Length: 1\r\nTransfer-Encoding: chunked\r\n"), b, why));
    EXPECT_FALSE(request_body(head("Transfer-Encoding: gzip, chunked\r\n"), b, why));
    EXPECT_FALSE(request_body(head("Content-Length: 1\r\nContent-Length: 2\r\n"), b, why));
    // The same value twice too (fuzz_http_differential: http_parser refuses it).
    EXPECT_FALSE(request_body(head("Content-Length: 1\r\nContent-Length: 1\r\n"), b, why));
    EXPECT_FALSE(request_body(head("Content-Length: -1\r\n"), b, why));
    // A framing header spelt with '_' (read as '-' by CGI-style servers), or a name
    // that only begins like one (prefix-matching parsers), is refused.
    // A tab around a framing value (fuzz_http_differential: http_parser reads
    // "chunked<TAB>" as another coding, and a tab in Content-Length as an error).
    for (const char* h : {"Content_Length: 5\r\n", "transfer_encoding: chunked\r\n",
                          "Transfer-Encodingx: chunked\r\n", "content-length2: 1\r\n",
                          "Transfer-Encoding: chunked\t\r\n", "Transfer-Encoding:\tchunked\r\n",
                          "Content-Length: 1\t\r\n"})
        EXPECT_EQ(parse_request_head(std::string("POST /x HTTP/1.1\r\nHost: a.test\r\n") + h + "\r\n",
                                     TargetForm::origin)
                      .status,
                  ParseStatus::bad)
            << h;
    // Inside a tunnel only the origin form, with a Host header.
    EXPECT_EQ(parse_request_head("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", TargetForm::origin).status,
              ParseStatus::bad);
    EXPECT_EQ(parse_request_head("GET / HTTP/1.1\r\n\r\n", TargetForm::origin).status, ParseStatus::bad);
}

TEST(NetHttpExchange, ResponsesAndForwardedHeads) {
    auto r = parse_response_head("HTTP/1.1 204 No Content\r\nX: y\r\n\r\nrest");
    ASSERT_EQ(r.status, ParseStatus::ok) << r.error;
    EXPECT_EQ(r.head_size, 33u);
    Body b;
    std::string why;
    ASSERT_TRUE(response_body(r.response, "GET", b, why));
    EXPECT_EQ(b.framing, Framing::none);
    r = parse_response_head("HTTP/1.1 200 OK\r\n\r\n");
    ASSERT_TRUE(response_body(r.response, "GET", b, why));
    EXPECT_EQ(b.framing, Framing::until_close);
    ASSERT_TRUE(response_body(r.response, "HEAD", b, why));
    EXPECT_EQ(b.framing, Framing::none);
    EXPECT_EQ(parse_response_head("SSH-2.0-x\r\n\r\n").status, ParseStatus::bad);
    auto q = parse_request_head("POST /v1 HTTP/1.1\r\nHost: api.test\r\nx-api-key: PH\r\nExpect: 100-continue\r\n"
                                "Upgrade: websocket\r\nConnection: Upgrade\r\nProxy-Authorization: x\r\n\r\n",
                                TargetForm::origin);
    ASSERT_EQ(q.status, ParseStatus::ok) << q.error;
    std::string h =
        exchange_head(q.request, "/v1", "api.test", 443, 443, true, {{"PH", "sk-1", {}}});
    EXPECT_EQ(
        h,
        "POST /v1 HTTP/1.1\r\nx-api-key: sk-1\r\nAccept-Encoding: identity\r\nHost: api.test\r\n"
        "Connection: keep-alive\r\n\r\n");
}

}  // namespace
}  // namespace agentjail::net

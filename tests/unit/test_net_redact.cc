// SPDX-License-Identifier: Apache-2.0
// Where a secret goes and that it does not come back (pure code): the placeholder
// becomes the value only in credential headers, and the streaming redactor masks the
// value in a response however its bytes are cut into reads and chunks; and the
// proxy's per-run bounds.
#include "netrules/http.hpp"
#include "net/proxy.hpp"
#include "netrules/redact.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace agentjail::net {
namespace {

const std::string kPh = "agentjail-secret-placeholder-API_KEY-0123456789abcdef";
const std::string kValue = "sk-live-4f9c2b7e1d3a5c6b8e0f";

std::vector<SecretUse> uses(std::vector<std::string> headers = {}) {
    return {{kPh, kValue, std::move(headers)}};
}

TEST(NetRedact, OnlyCredentialHeadersGetTheValue) {
    EXPECT_TRUE(carries_credential("Authorization", {}));
    EXPECT_TRUE(carries_credential("X-API-KEY", {}));
    EXPECT_TRUE(carries_credential("x-goog-api-key", {"X-Goog-Api-Key"}));
    for (const char* h : {"Origin", "Referer", "Cookie", "Proxy-Authorization", "Host",
                          "X-Forwarded-For", "Accept", "x-goog-api-key"})
        EXPECT_FALSE(carries_credential(h, {})) << h;
    // A policy cannot make a reflected header a credential header.
    EXPECT_FALSE(carries_credential("Origin", {"Origin"}));
    EXPECT_EQ(put_secrets("Authorization", "Bearer " + kPh, uses()), "Bearer " + kValue);
    EXPECT_EQ(put_secrets("Origin", "https://" + kPh, uses()), "https://" + kPh);
    EXPECT_EQ(put_secrets("Cookie", "k=" + kPh, uses()), "k=" + kPh);
    EXPECT_EQ(put_secrets("X-Custom", kPh, uses({"x-custom"})), kValue);
}

TEST(NetRedact, TheHeadGoesOutWithTheValueInItsCredentialHeaderOnly) {
    std::string in = "POST " + std::string("/v1?k=") + kPh +
                     " HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer " + kPh +
                     "\r\nOrigin: https://" + kPh + "\r\nReferer: https://x/" + kPh +
                     "\r\nCookie: s=" + kPh + "\r\nProxy-Authorization: Basic " + kPh +
                     "\r\nAccept-Encoding: gzip\r\nContent-Length: 3\r\n\r\n";
    auto q = parse_request_head(in, TargetForm::origin);
    ASSERT_EQ(q.status, ParseStatus::ok) << q.error;
    std::string h = exchange_head(q.request, "/v1?k=" + kPh, "api.test", 443, 443, true, uses());
    EXPECT_NE(h.find("Authorization: Bearer " + kValue + "\r\n"), std::string::npos) << h;
    // The value is nowhere else: one occurrence in all.
    EXPECT_EQ(h.find(kValue), h.rfind(kValue)) << h;
    EXPECT_NE(h.find("Origin: https://" + kPh), std::string::npos) << h;
    EXPECT_NE(h.find("POST /v1?k=" + kPh + " "), std::string::npos) << h;
    EXPECT_EQ(h.find("Proxy-Authorization"), std::string::npos) << h;
    // Compressed bodies would hide an echo from the redactor.
    EXPECT_NE(h.find("Accept-Encoding: identity\r\n"), std::string::npos) << h;
    EXPECT_EQ(h.find("gzip"), std::string::npos) << h;
    // Without secrets the client's Accept-Encoding goes on.
    std::string plain = exchange_head(q.request, "/v1", "api.test", 443, 443, true, {});
    EXPECT_NE(plain.find("Accept-Encoding: gzip"), std::string::npos) << plain;
}

TEST(NetRedact, AResponseHeadGetsThePlaceholderBack) {
    std::string head = "HTTP/1.1 200 OK\r\nAccess-Control-Allow-Origin: https://" + kValue +
                       "\r\nX-Echo: Bearer " + kValue + "\r\n\r\n";
    std::string out = redact_head(head, uses());
    EXPECT_EQ(out.find(kValue), std::string::npos) << out;
    EXPECT_NE(out.find("Access-Control-Allow-Origin: https://" + kPh + "\r\n"), std::string::npos)
        << out;
}

TEST(NetRedact, TheMaskIsAsLongAsTheValue) {
    SecretUse shorter{kPh, "abc", {}}, longer{"PH", std::string(7, 'v'), {}};
    EXPECT_EQ(body_mask(shorter), "age");
    EXPECT_EQ(body_mask(longer), "PHPHPHP");
    EXPECT_EQ(body_mask(uses()[0]).size(), kValue.size());
}

// Every way of cutting "...value..." into two or three pieces is masked, and what
// comes out is exactly as long as what went in (Content-Length stays true).
TEST(NetRedact, AValueSplitAcrossPiecesIsStillMasked) {
    const std::string body = "{\"echo\":\"" + kValue + "\",\"again\":\"" + kValue + "\"}";
    const std::string want =
        "{\"echo\":\"" + body_mask(uses()[0]) + "\",\"again\":\"" + body_mask(uses()[0]) + "\"}";
    for (size_t a = 0; a <= body.size(); ++a) {
        for (size_t b = a; b <= body.size(); b += 3) {
            Redactor r(uses());
            std::string out = r.feed(body.substr(0, a));
            out += r.feed(body.substr(a, b - a));
            out += r.feed(body.substr(b));
            out += r.finish();
            ASSERT_EQ(out, want) << "cut at " << a << ", " << b;
        }
    }
    // One byte at a time.
    Redactor r(uses());
    std::string out;
    for (char c : body) {
        out += r.feed(std::string(1, c));
        ASSERT_LE(r.held(), r.window());  // bounded: never more than the window
    }
    out += r.finish();
    EXPECT_EQ(out, want);
}

TEST(NetRedact, TheHeldTailGoesOnAtFinishAndTheStreamGoesOn) {
    Redactor r(uses());
    // The longest string looked for, less one: the value's base64 at an alignment
    // (37 characters of the 28-byte value's), longer than the value itself.
    const size_t window = r.window();
    EXPECT_EQ(window, 36u);
    std::string part = kValue.substr(0, 10);
    std::string out = r.feed(std::string(40, 't') + part);
    EXPECT_EQ(out, std::string(40 + part.size() - window, 't'));
    EXPECT_EQ(r.held(), window);
    EXPECT_EQ(r.finish(), std::string(window - part.size(), 't') + part);
    // finish() when the origin was quiet: the stream goes on afterwards as before.
    Redactor f(uses());
    EXPECT_EQ(f.feed("event: ping\n\n"), "");
    EXPECT_EQ(f.finish(), "event: ping\n\n");
    EXPECT_EQ(f.held(), 0u);
    const std::string mask = body_mask(uses()[0]);
    std::string got = f.feed("x" + kValue + "y");
    got += f.finish();
    EXPECT_EQ(got, "x" + mask + "y");
}

// The lengths of what feed() lets go, call after call, for `in` cut at a and b.
std::vector<size_t> release_lengths(const std::string& in, size_t a, size_t b, std::string* out) {
    Redactor r(uses());
    std::vector<size_t> n;
    for (const auto& piece : {in.substr(0, a), in.substr(a, b - a), in.substr(b)}) {
        std::string got = r.feed(piece);
        n.push_back(got.size());
        n.push_back(r.held());
        *out += got;
    }
    std::string rest = r.finish();
    n.push_back(rest.size());
    *out += rest;
    return n;
}

// Issue 26: what the redactor lets go, and when, never depends on the bytes. Before,
// a tail that was a prefix of the value was held back and every other tail went on
// at once, so an echoing origin told the sandbox, by the timing of its own guess
// coming back, how much of the secret it had right. Every prefix of the value (and
// the value whole), after some filler, cut into three pieces in every way, comes out
// in pieces as long as those of the same number of bytes that begin nothing: the
// right guess, a guess wrong in its last byte and plain filler are alike.
TEST(NetRedact, WhatGoesOnWhenNeverDependsOnTheBytes) {
    const std::string filler = "{\"echo\":\"";
    for (size_t k = 1; k <= kValue.size(); ++k) {
        const std::string right = filler + kValue.substr(0, k);
        std::string wrong = right;
        wrong.back() = wrong.back() == 'Z' ? 'Y' : 'Z';
        const std::string plain(right.size(), 'q');
        for (size_t a = 0; a <= right.size(); ++a) {
            for (size_t b = a; b <= right.size(); ++b) {
                std::string out_r, out_w, out_p;
                auto n_r = release_lengths(right, a, b, &out_r);
                auto n_w = release_lengths(wrong, a, b, &out_w);
                auto n_p = release_lengths(plain, a, b, &out_p);
                ASSERT_EQ(n_r, n_p) << "prefix of " << k << " bytes cut at " << a << ", " << b;
                ASSERT_EQ(n_w, n_p) << "prefix of " << k << " bytes cut at " << a << ", " << b;
                // Exactly as long as the input; a whole value masked, a prefix not.
                ASSERT_EQ(out_r.size(), right.size());
                ASSERT_EQ(out_w, wrong);
                ASSERT_EQ(out_r, k < kValue.size() ? right : filler + body_mask(uses()[0]));
            }
        }
    }
}

// A mask that reaches into the held tail goes with it, later: the count let go
// stays all but the window even when a value was found.
TEST(NetRedact, AMaskReachingIntoTheHeldTailGoesLater) {
    Redactor r(uses());
    const std::string mask = body_mask(uses()[0]);
    const std::string filler(r.window() + 1 - kValue.size(), 'z');
    std::string out = r.feed("ab" + kValue + filler);
    EXPECT_EQ(out, "ab" + mask.substr(0, 1));
    EXPECT_EQ(r.held(), r.window());
    out += r.feed("cd");
    EXPECT_EQ(out.size(), 5u);
    out += r.finish();
    EXPECT_EQ(out, "ab" + mask + filler + "cd");
}

// ---- the value echoed encoded ----------------------------------------------------

const std::string kOdd = "tok/en+4f9c\"2b\\7e 1d=3a~";  // every escaping changes it

std::string b64(const std::string& in, bool url) {
    const char* abc = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                          : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                     (static_cast<unsigned char>(in[i + 1]) << 8) |
                     static_cast<unsigned char>(in[i + 2]);
        for (int k = 0; k < 4; ++k) out += abc[(v >> (18 - 6 * k)) & 63];
    }
    if (i < in.size()) {
        unsigned v = static_cast<unsigned char>(in[i]) << 16;
        if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
        out += abc[(v >> 18) & 63];
        out += abc[(v >> 12) & 63];
        out += i + 1 < in.size() ? abc[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

// `in` fed a byte at a time, then finish(): what the sandbox would get.
std::string redacted(const std::string& value, const std::string& in) {
    Redactor r({{kPh, value, {}}});
    std::string out;
    for (char c : in) out += r.feed(std::string(1, c));
    return out + r.finish();
}

// An origin that echoes the value in base64 (a Basic credential, a JWT-style field, a
// debug dump), at any of the three alignments, in either alphabet: every character
// that depends on the value alone is masked; only the one at either end, which mixes
// in the neighbouring bytes, is left.
TEST(NetRedact, AValueEchoedInBase64IsMasked) {
    for (const std::string& value : {kValue, kOdd}) {
        for (size_t a = 0; a < 3; ++a) {
            for (bool url : {false, true}) {
                const std::string enc =
                    b64(std::string("\x01\x02\x03").substr(0, a) + value + "!?", url);
                const std::string in = "{\"b\":\"" + enc + "\"}";
                const std::string out = redacted(value, in);
                ASSERT_EQ(out.size(), in.size());
                const size_t at = 6, first = (8 * a + 5) / 6, end = (8 * (a + value.size())) / 6;
                ASSERT_EQ(out.substr(0, at + first), in.substr(0, at + first)) << a << url;
                ASSERT_EQ(out.substr(at + end), in.substr(at + end)) << a << url;
                for (size_t j = first; j < end; ++j) {
                    ASSERT_EQ(out[at + j],
                              body_mask({kPh, std::string(end - first, 'v'), {}})[j - first])
                        << "alignment " << a << (url ? " url" : " std") << ", character " << j
                        << ": " << out;
                }
                ASSERT_LE(first, 3u);
            }
        }
    }
}

TEST(NetRedact, AValueEchoedPercentEncodedOrJsonEscapedIsMasked) {
    const std::string mask = body_mask({kPh, kOdd, {}});
    const std::string upper = "tok%2Fen%2B4f9c%222b%5C7e%201d%3D3a~";
    std::string lower = "tok%2fen%2b4f9c%222b%5c7e%201d%3d3a~";
    for (const std::string& form : {upper, lower, std::string("tok/en+4f9c\\\"2b\\\\7e 1d=3a~"),
                                    std::string("tok\\/en+4f9c\\\"2b\\\\7e 1d=3a~")}) {
        const std::string in = "q=" + form + "&next=1";
        const std::string out = redacted(kOdd, in);
        ASSERT_EQ(out.size(), in.size());
        EXPECT_EQ(out, "q=" + body_mask({kPh, form, {}}) + "&next=1") << form;
    }
    // The value as it is, too, and in a head by the placeholder or a mask.
    EXPECT_EQ(redacted(kOdd, "<" + kOdd + ">"), "<" + mask + ">");
    const std::string head =
        "HTTP/1.1 200 OK\r\nX-Echo: " + upper + "\r\nX-Raw: " + kOdd + "\r\n\r\n";
    const std::string h = redact_head(head, {{kPh, kOdd, {}}});
    EXPECT_EQ(h, "HTTP/1.1 200 OK\r\nX-Echo: " + body_mask({kPh, upper, {}}) + "\r\nX-Raw: " + kPh +
                     "\r\n\r\n");
}

// The forms are whole strings of their own: none is the value, none is short.
TEST(NetRedact, EchoFormsLeaveOutTheValueAndShortOnes) {
    for (const auto& f : echo_forms(kValue)) {
        EXPECT_NE(f, kValue);
        EXPECT_GE(f.size(), 8u);
    }
    // Base64 only (nothing in the value to escape), at three alignments, with no "+" or
    // "/" in them, so the URL-safe alphabet gives the same strings.
    EXPECT_EQ(echo_forms(kValue).size(), 3u);
    EXPECT_TRUE(echo_forms("abc").empty());
    EXPECT_EQ(redacted("abc", "QUJD YWJj"), "QUJD YWJj");
}

// A short secret inside a longer one that is still arriving does not unmask the rest.
TEST(NetRedact, OverlappingSecretsMaskTheLongerOne) {
    std::vector<SecretUse> two{{"P1", "abcdefgh", {}}, {"P2", "cd", {}}};
    Redactor r(two);
    std::string out = r.feed("xxabcd");
    out += r.feed("efghyy");
    out += r.finish();
    EXPECT_EQ(out, "xxP1P1P1P1yy");
    EXPECT_EQ(out.find("ef"), std::string::npos);
}

TEST(NetRedact, WithoutSecretsEverythingPassesAtOnce) {
    Redactor r({});
    EXPECT_TRUE(r.idle());
    EXPECT_EQ(r.feed("abc"), "abc");
    EXPECT_EQ(r.finish(), "");
}

}  // namespace
}  // namespace agentjail::net

namespace agentjail::net {
namespace {

// The proxy's per-run bounds follow the memory limit (docs/network.md, Bounds).
TEST(NetBounds, ScaleWithTheMemoryLimit) {
    Bounds none = bounds_for(std::nullopt, 256);
    EXPECT_EQ(none.max_connections, 256u);
    EXPECT_EQ(none.max_pipes, 128u);
    EXPECT_EQ(none.pipe_size, 16 * 1024);
    EXPECT_EQ(none.socket_buffer, 128 * 1024);
    Bounds small = bounds_for(32ull << 20, 256);
    EXPECT_EQ(small.max_connections, 16u);
    EXPECT_EQ(small.max_pipes, 32u);
    // Worst case of the kernel's socket memory (2 sockets x 2 buffers x 2 x size) stays
    // within half of the limit.
    EXPECT_LE(small.max_connections * 8u * static_cast<std::size_t>(small.socket_buffer),
              (32u << 20) / 2);
    EXPECT_EQ(bounds_for(1ull << 20, 256).max_connections, 8u);     // never below 8
    EXPECT_EQ(bounds_for(64ull << 30, 100).max_connections, 100u);  // the policy's, when lower
    EXPECT_EQ(bounds_for(std::nullopt, 0).max_connections, 1u);
}

}  // namespace
}  // namespace agentjail::net

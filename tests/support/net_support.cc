// SPDX-License-Identifier: Apache-2.0
// Loopback HTTP/HTTPS test servers, a self-signed certificate, the proxy log reader
// and the pinning policy writer of the network tests.
#include "net_support.hpp"
#include "thread_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <csignal>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace ajnet {

namespace {

std::string ssl_error(const char* what) {
    char buf[256];
    unsigned long e = ERR_get_error();
    ERR_error_string_n(e, buf, sizeof buf);
    return std::string(what) + ": " + buf;
}

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// A connection, plain or TLS, with blocking I/O bounded by socket timeouts.
struct Conn {
    int fd = -1;
    SSL* ssl = nullptr;
    ssize_t read(char* buf, size_t n) {
        if (ssl == nullptr) {
            ssize_t r;
            do {
                r = ::recv(fd, buf, n, 0);
            } while (r < 0 && errno == EINTR);
            return r;
        }
        int r = SSL_read(ssl, buf, static_cast<int>(n));
        return r > 0 ? r : (SSL_get_error(ssl, r) == SSL_ERROR_ZERO_RETURN ? 0 : -1);
    }
    bool write_all(const char* p, size_t n) {
        while (n > 0) {
            ssize_t w;
            if (ssl == nullptr) {
                do {
                    w = ::send(fd, p, n, MSG_NOSIGNAL);
                } while (w < 0 && errno == EINTR);
            } else {
                int chunk = n > (1u << 20) ? (1 << 20) : static_cast<int>(n);
                w = SSL_write(ssl, p, chunk);
            }
            if (w <= 0) return false;
            p += w;
            n -= static_cast<size_t>(w);
        }
        return true;
    }
    bool write_all(const std::string& s) { return write_all(s.data(), s.size()); }
};

std::string head_header(const std::string& head, const std::string& name) {
    std::istringstream hs(head);
    std::string l;
    while (std::getline(hs, l)) {
        if (!l.empty() && l.back() == '\r') l.pop_back();
        auto colon = l.find(':');
        if (colon != std::string::npos && lower(l.substr(0, colon)) == name)
            return ajtest::trim(l.substr(colon + 1));
    }
    return std::string();
}

// RFC 6455 4.2.2: base64(SHA-1(key + GUID)), written here apart from the proxy's own.
std::string ws_accept(const std::string& key) {
    std::string in = key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(in.data(), in.size(), md, &n, EVP_sha1(), nullptr);
    unsigned char out[64];
    int len = EVP_EncodeBlock(out, md, static_cast<int>(n));
    return std::string(reinterpret_cast<char*>(out), static_cast<size_t>(len));
}

// One server frame: FIN, the opcode, unmasked (RFC 6455 5.1), payload under 64 KiB.
std::string ws_frame(unsigned char opcode, const std::string& payload) {
    std::string f;
    f += static_cast<char>(0x80 | opcode);
    if (payload.size() < 126) {
        f += static_cast<char>(payload.size());
    } else {
        f += static_cast<char>(126);
        f += static_cast<char>((payload.size() >> 8) & 0xff);
        f += static_cast<char>(payload.size() & 0xff);
    }
    return f + payload;
}

// The WebSocket echo of TestServer's /ws route, after its 101: each text or binary
// message comes back as it was, except "head", answered with the handshake's head as
// the origin received it (so a test sees what the proxy sent, and that a value in it
// comes back masked); a close frame is answered with one and ends the connection.
void ws_echo(Conn& c, const std::string& handshake_head, std::string in) {
    char buf[65536];
    auto need = [&](size_t n) {
        while (in.size() < n) {
            ssize_t r = c.read(buf, sizeof buf);
            if (r <= 0) return false;
            in.append(buf, static_cast<size_t>(r));
        }
        return true;
    };
    for (;;) {
        if (!need(2)) return;
        auto b0 = static_cast<unsigned char>(in[0]), b1 = static_cast<unsigned char>(in[1]);
        size_t len = b1 & 0x7f, at = 2;
        if (len == 126) {
            if (!need(4)) return;
            len = (static_cast<size_t>(static_cast<unsigned char>(in[2])) << 8) | static_cast<unsigned char>(in[3]);
            at = 4;
        } else if (len == 127) {
            return;  // the tests send small messages
        }
        bool masked = (b1 & 0x80) != 0;
        if (!need(at + (masked ? 4 : 0) + len)) return;
        std::string key = masked ? in.substr(at, 4) : std::string();
        at += masked ? 4 : 0;
        std::string payload = in.substr(at, len);
        in.erase(0, at + len);
        for (size_t i = 0; masked && i < payload.size(); ++i) payload[i] = static_cast<char>(payload[i] ^ key[i % 4]);
        unsigned char op = b0 & 0x0f;
        if (op == 0x8) {
            c.write_all(ws_frame(0x8, payload));
            return;
        }
        if (op == 0x9) {
            if (!c.write_all(ws_frame(0xA, payload))) return;
            continue;
        }
        if (!c.write_all(ws_frame(op, payload == "head" ? handshake_head : payload))) return;
    }
}

}  // namespace

Cert make_cert(const std::string& cert_path, const std::string& key_path,
               const std::vector<std::string>& names) {
    if (names.empty()) throw std::runtime_error("make_cert: no names");
    EVP_PKEY* key = EVP_EC_gen("P-256");
    if (key == nullptr) throw std::runtime_error(ssl_error("EVP_EC_gen"));
    X509* x = X509_new();
    std::string san;
    for (const auto& n : names) san += (san.empty() ? "DNS:" : ",DNS:") + n;
    bool ok = x != nullptr && X509_set_version(x, 2) == 1 &&
              ASN1_INTEGER_set(X509_get_serialNumber(x), 1) == 1 &&
              X509_gmtime_adj(X509_getm_notBefore(x), -3600) != nullptr &&
              X509_gmtime_adj(X509_getm_notAfter(x), 86400) != nullptr &&
              X509_set_pubkey(x, key) == 1;
    if (ok) {
        X509_NAME* subject = X509_get_subject_name(x);
        ok = X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                                        reinterpret_cast<const unsigned char*>(names[0].c_str()),
                                        -1, -1, 0) == 1 &&
             X509_set_issuer_name(x, subject) == 1;
    }
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
    for (auto [nid, value] : {std::pair<int, std::string>{NID_subject_alt_name, san},
                              {NID_basic_constraints, "critical,CA:TRUE"}}) {
        if (!ok) break;
        X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
        ok = ext != nullptr && X509_add_ext(x, ext, -1) == 1;
        X509_EXTENSION_free(ext);
    }
    ok = ok && X509_sign(x, key, EVP_sha256()) > 0;
    std::string why = ok ? "" : ssl_error("making the certificate");
    if (ok) {
        FILE* cf = std::fopen(cert_path.c_str(), "w");
        FILE* kf = std::fopen(key_path.c_str(), "w");
        ok = cf != nullptr && kf != nullptr && PEM_write_X509(cf, x) == 1 &&
             PEM_write_PrivateKey(kf, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
        if (cf != nullptr) std::fclose(cf);
        if (kf != nullptr) std::fclose(kf);
        if (!ok) why = "writing " + cert_path + " or " + key_path;
    }
    X509_free(x);
    EVP_PKEY_free(key);
    if (!ok) throw std::runtime_error(why);
    return {cert_path, key_path};
}

struct TestServer::Impl {
    Options opts;
    mutable std::mutex mu;
    std::vector<Request> requests;
    std::map<std::string, std::string> bodies;
    std::string root;
    std::unique_ptr<ajtest::ThreadServer> server;  // last: its threads use the rest
};

TestServer::TestServer() : TestServer(Options{}) {}

TestServer::TestServer(const Options& opts) : impl_(std::make_unique<Impl>()) {
    impl_->opts = opts;
    ajtest::ThreadServer::Options so;
    so.what = "test server " + opts.name;
    so.ipv6 = opts.ipv6;
    if (opts.tls != nullptr) {
        so.tls_cert = opts.tls->cert_path;
        so.tls_key = opts.tls->key_path;
    }
    // Small writes leave as they are written (the /echo routes cut their bodies).
    so.nodelay = true;
    so.recv_timeout_s = so.send_timeout_s = 10;
    impl_->server = std::make_unique<ajtest::ThreadServer>(
        so, [this](int fd, SSL* ssl) { handle(fd, ssl); });
    port_ = impl_->server->port();
}

TestServer::~TestServer() { stop(); }

void TestServer::stop() { impl_->server->stop(); }

int TestServer::connections() const { return impl_->server->connections(); }

std::vector<Request> TestServer::requests() const {
    std::lock_guard<std::mutex> l(impl_->mu);
    return impl_->requests;
}

void TestServer::set_body(const std::string& path, const std::string& body) {
    std::lock_guard<std::mutex> l(impl_->mu);
    impl_->bodies[path] = body;
}

void TestServer::serve_dir(const std::string& root) {
    std::lock_guard<std::mutex> l(impl_->mu);
    impl_->root = root;
}

void TestServer::handle(int fd, SSL* ssl) {
    Conn c{fd, ssl};
    std::string in;
    char buf[65536];
    size_t end;
    // keep_alive: requests without a body are answered one after the other on the
    // connection (bodies are not kept apart, so a request with one ends it).
    for (bool more = true; more;) {
    more = false;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        if (in.size() > 65536) return;
        ssize_t r = c.read(buf, sizeof buf);
        if (r <= 0) return;
        in.append(buf, static_cast<size_t>(r));
    }
    Request req;
    req.head = in.substr(0, end);
    std::istringstream head(in.substr(0, end));
    std::string line;
    std::getline(head, line);
    {
        std::istringstream rl(line);
        rl >> req.method >> req.target;
    }
    std::size_t content_length = 0;
    while (std::getline(head, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string name = lower(line.substr(0, colon));
        std::string value = ajtest::trim(line.substr(colon + 1));
        if (name == "host") req.host = value;
        if (name == "content-length") content_length = std::strtoull(value.c_str(), nullptr, 10);
    }
    std::size_t have = in.size() - end - 4;
    // The body's first bytes, for the routes that echo it.
    std::string body_in = in.substr(end + 4, 65536);
    while (have < content_length) {
        ssize_t r = c.read(buf, sizeof buf);
        if (r <= 0) break;
        if (body_in.size() < 65536)
            body_in.append(buf, std::min<size_t>(static_cast<size_t>(r), 65536 - body_in.size()));
        have += static_cast<size_t>(r);
    }
    req.body_bytes = have;

    std::string path = req.target;
    if (path.rfind("http://", 0) == 0 || path.rfind("https://", 0) == 0) {
        auto slash = path.find('/', path.find("//") + 2);
        path = slash == std::string::npos ? "/" : path.substr(slash);
    }
    path = path.substr(0, path.find('?'));
    {
        std::lock_guard<std::mutex> l(impl_->mu);
        impl_->requests.push_back(req);
    }

    auto respond = [&](int code, const char* status, const std::string& body, std::size_t length) {
        std::string h = "HTTP/1.1 " + std::to_string(code) + " " + status +
                        "\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                        std::to_string(length) +
                        (impl_->opts.keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
        if (!c.write_all(h) || req.method == "HEAD") return;
        c.write_all(body);
    };
    if (impl_->opts.keep_alive && content_length == 0 && have == 0) {
        in.erase(0, end + 4);
        more = true;
    }
    std::string body;
    bool found = false;
    {
        std::lock_guard<std::mutex> l(impl_->mu);
        auto it = impl_->bodies.find(path);
        if (it != impl_->bodies.end()) {
            body = it->second;
            found = true;
        }
    }
    if (path == "/ws" && lower(head_header(req.head, "upgrade")) == "websocket") {
        std::string h = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Accept: " +
                        ws_accept(head_header(req.head, "sec-websocket-key")) + "\r\n\r\n";
        if (c.write_all(h)) ws_echo(c, req.head, more ? in : in.substr(end + 4));
        return;
    } else if (path == "/ws-wrong-accept" || path == "/switch") {
        // A 101 that does not answer the handshake (a wrong Sec-WebSocket-Accept), or
        // that answers a request which asked for no upgrade at all; then bytes that
        // would be an HTTP request if anything relayed them.
        c.write_all("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n");
        c.write_all("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nsmuggled\n");
        return;
    } else if (path == "/echo" || path == "/echo-chunked") {
        // A reflecting origin: CORS-style Access-Control-Allow-Origin from Origin,
        // the credential headers echoed into response headers, and the whole request
        // head as the body, sent in small pieces (and for /echo-chunked, chunks of
        // 7 bytes) so that a value in it is cut across reads and chunks.
        auto header = [&](const std::string& name) {
            std::istringstream hs(req.head);
            std::string l;
            while (std::getline(hs, l)) {
                if (!l.empty() && l.back() == '\r') l.pop_back();
                auto colon = l.find(':');
                if (colon != std::string::npos && lower(l.substr(0, colon)) == name)
                    return ajtest::trim(l.substr(colon + 1));
            }
            return std::string();
        };
        bool chunked = path == "/echo-chunked";
        body = req.head + "\r\n";
        std::string h =
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nAccess-Control-Allow-Origin: " +
            header("origin") +
            "\r\nVary: Origin\r\nX-Echo-Authorization: " + header("authorization") +
            "\r\nX-Echo-Api-Key: " + header("x-api-key") +
            "\r\nX-Echo-Marker: " + header("x-marker") + "\r\n" +
            (chunked ? std::string("Transfer-Encoding: chunked\r\n")
                     : "Content-Length: " + std::to_string(body.size()) + "\r\n") +
            "Connection: close\r\n\r\n";
        if (c.write_all(h) && req.method != "HEAD") {
            for (size_t at = 0; at < body.size(); at += 7) {
                std::string piece = body.substr(at, 7);
                if (chunked) {
                    char size[16];
                    std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
                    piece = size + piece + "\r\n";
                }
                if (!c.write_all(piece)) break;
            }
            if (chunked) c.write_all("0\r\n\r\n");
        }
    } else if (path == "/echo-paced" || path == "/echo-paced-chunked") {
        // An origin that echoes what it is sent, the way a prober wants: its
        // Authorization header and its body, written 3 bytes at a time 10 ms apart,
        // then a pause of a second, then "|end\n". What reaches the client, and
        // when, must not depend on whether the body begins a secret (issue 26).
        bool chunked = path == "/echo-paced-chunked";
        body = "auth=" + head_header(req.head, "authorization") + "\n" + body_in;
        const std::string tail = "|end\n";
        std::string h =
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" +
            (chunked ? std::string("Transfer-Encoding: chunked\r\n")
                     : "Content-Length: " + std::to_string(body.size() + tail.size()) + "\r\n") +
            "Connection: close\r\n\r\n";
        auto piece = [&](const std::string& p) {
            if (!chunked) return c.write_all(p);
            char size[16];
            std::snprintf(size, sizeof size, "%zx\r\n", p.size());
            return c.write_all(size + p + "\r\n");
        };
        bool ok = c.write_all(h);
        for (size_t at = 0; ok && at < body.size(); at += 3) {
            ok = piece(body.substr(at, 3));
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (ok) std::this_thread::sleep_for(std::chrono::seconds(1));
        if (ok && piece(tail) && chunked) c.write_all("0\r\n\r\n");
    } else if (req.method == "POST" || req.method == "PUT") {
        body = "got " + std::to_string(req.body_bytes) + " bytes\n";
        respond(200, "OK", body, body.size());
    } else if (found) {
        respond(200, "OK", body, body.size());
    } else if (path == "/hello") {
        body = "hello from " + impl_->opts.name + "\n";
        respond(200, "OK", body, body.size());
    } else if (path.rfind("/bytes/", 0) == 0) {
        std::size_t n = std::strtoull(path.c_str() + 7, nullptr, 10);
        if (n > (2ULL << 30)) n = 2ULL << 30;
        std::string h =
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
            std::to_string(n) + "\r\nConnection: close\r\n\r\n";
        if (c.write_all(h) && req.method != "HEAD") {
            std::string chunk(1 << 20, 'x');
            while (n > 0) {
                std::size_t k = n < chunk.size() ? n : chunk.size();
                if (!c.write_all(chunk.data(), k)) break;
                n -= k;
            }
        }
    } else {
        std::string root;
        {
            std::lock_guard<std::mutex> l(impl_->mu);
            root = impl_->root;
        }
        std::error_code ec;
        std::filesystem::path file = std::filesystem::path(root) / path.substr(1);
        if (!root.empty() && path.find("..") == std::string::npos &&
            std::filesystem::is_regular_file(file, ec)) {
            body = ajtest::read_file(file.string());
            respond(200, "OK", body, body.size());
        } else {
            body = "not found\n";
            respond(404, "Not Found", body, body.size());
        }
    }
    }
}

std::vector<nlohmann::json> read_log(const std::string& path) {
    std::vector<nlohmann::json> out;
    for (const auto& l : ajtest::lines(ajtest::read_file(path))) {
        if (ajtest::trim(l).empty()) continue;
        auto j = nlohmann::json::parse(l, nullptr, false);
        if (j.is_discarded() || !j.is_object()) j = nlohmann::json{{"unparsed", l}};
        out.push_back(std::move(j));
    }
    return out;
}

std::vector<nlohmann::json> log_entries(const std::vector<nlohmann::json>& log,
                                        const std::string& host, const std::string& decision) {
    std::vector<nlohmann::json> out;
    for (const auto& j : log) {
        if (!j.contains("host") || !j["host"].is_string() || j["host"].get<std::string>() != host)
            continue;
        if (!decision.empty() && (!j.contains("decision") || j["decision"] != decision)) continue;
        out.push_back(j);
    }
    return out;
}

std::string dump(const std::vector<nlohmann::json>& log) {
    std::string s;
    for (const auto& j : log) s += j.dump() + "\n";
    return s.empty() ? "(empty log)\n" : s;
}

std::string toml(const NetPolicy& p) {
    auto list = [](const std::vector<std::string>& v) {
        std::string s = "[";
        for (size_t i = 0; i < v.size(); ++i) s += (i ? ", \"" : "\"") + v[i] + "\"";
        return s + "]";
    };
    // Quoted host patterns first, then the verbatim TOML entries (rule tables).
    auto entries = [&](const std::vector<std::string>& v, const std::vector<std::string>& raw) {
        std::string s = list(v);
        if (raw.empty()) return s;
        s.pop_back();
        for (size_t i = 0; i < raw.size(); ++i) s += (i || !v.empty() ? ",\n    " : "\n    ") + raw[i];
        return s + ",\n]";
    };
    std::string s = "extends = \"" + p.extends + "\"\n\n[network]\n";
    if (!p.mode.empty()) s += "mode = \"" + p.mode + "\"\n";
    if (!p.allow.empty() || !p.allow_toml.empty()) s += "allow = " + entries(p.allow, p.allow_toml) + "\n";
    if (!p.deny.empty() || !p.deny_toml.empty()) s += "deny = " + entries(p.deny, p.deny_toml) + "\n";
    if (!p.hosts.empty()) {
        s += "\n[network.hosts]\n";
        for (const auto& [name, addr] : p.hosts) s += "\"" + name + "\" = \"" + addr + "\"\n";
    }
    return s + p.extra;
}

}  // namespace ajnet

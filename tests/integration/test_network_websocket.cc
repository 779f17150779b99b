// SPDX-License-Identifier: Apache-2.0
// WebSocket upgrades through intercepted hosts (docs/network.md "WebSocket"): a
// Python client inside the sandbox speaks the opening handshake and frames itself,
// through a CONNECT tunnel the proxy intercepts and as absolute-form plain HTTP,
// to the WebSocket echo of the test servers; the handshake is checked like any
// request (a denied path gets 403), a secret goes into its credential header, what
// comes back is masked, and a 101 that does not answer the handshake is refused.
#include "common.hpp"
#include "net_support.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using ajit::describe;
using ajnet::NetPolicy;
using ajnet::TestServer;

namespace {

// The client: wsclient.py MODE HOST PORT PATH MESSAGE... (MODE "tunnel": CONNECT,
// then TLS trusting $SSL_CERT_FILE; "plain": absolute-form GET through the proxy).
// Lines: "R status CODE", "R body TEXT" (non-101), "R msg N PAYLOAD" (newlines as
// '|'), "R closed".
const char* kClient = R"PY(import base64, os, socket, ssl, struct, sys
mode, host, port, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
s = socket.create_connection(('127.0.0.1', 3128), timeout=15)
buf = b''
def head():
    global buf
    while b'\r\n\r\n' not in buf:
        d = s.recv(65536)
        if not d: break
        buf += d
    i = buf.find(b'\r\n\r\n')
    if i < 0: return ''
    h = buf[:i].decode('latin1'); buf = buf[i+4:]
    return h
if mode == 'tunnel':
    s.sendall(('CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n' % (host, port, host, port)).encode())
    print('R connect', head().split('\r\n')[0])
    s = ssl.create_default_context(cafile=os.environ['SSL_CERT_FILE']).wrap_socket(s, server_hostname=host)
    target = path
else:
    target = 'http://%s:%d%s' % (host, port, path)
key = base64.b64encode(os.urandom(16)).decode()
extra = os.environ.get('WS_EXTRA', '').replace('\\r\\n', '\r\n')
s.sendall(('GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
           'Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n'
           'Authorization: Bearer %s\r\n\r\n%s' % (target, host, port, key, os.environ.get('API_KEY', 'none'), extra)).encode())
h = head()
status = h.split(' ')[1] if h else 'none'
print('R status', status)
if status != '101' and os.environ.get('WS_THEN_GET'):
    # The answer was plain HTTP: read its body, then use the connection for another request.
    n = int([l.split(':')[1] for l in h.split('\r\n') if l.lower().startswith('content-length:')][0])
    while len(buf) < n: buf += s.recv(65536)
    print('R body', buf[:n].decode('latin1').replace('\n', '|'))
    buf = buf[n:]
    s.sendall(('GET /hello HTTP/1.1\r\nHost: %s:%d\r\n\r\n' % (host, port)).encode())
    print('R second', head().split(' ')[1])
    sys.exit(0)
if status != '101':
    try:
        while True:
            d = s.recv(65536)
            if not d: break
            buf += d
    except Exception: pass
    print('R body', buf.decode('latin1').replace('\n', '|'))
    sys.exit(0)
def send(op, p):
    mk = os.urandom(4)
    n = len(p)
    hd = bytes([0x80 | op]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack('>H', n))
    s.sendall(hd + mk + bytes(b ^ mk[i % 4] for i, b in enumerate(p)))
def recv():
    global buf
    while True:
        if len(buf) >= 2:
            n, at = buf[1] & 0x7f, 2
            if n == 126 and len(buf) >= 4: n, at = struct.unpack('>H', buf[2:4])[0], 4
            if n != 126 and len(buf) >= at + n:
                op, p = buf[0] & 0x0f, buf[at:at + n]
                buf = buf[at + n:]
                return op, p
        d = s.recv(65536)
        if not d: return None, b''
        buf += d
for i, m in enumerate(sys.argv[5:]):
    send(1, m.encode())
    op, p = recv()
    print('R msg', i, p.decode('latin1').replace('\r', '').replace('\n', '|'))
send(8, b'\x03\xe8')
op, p = recv()
print('R closed', op)
)PY";

class NetworkWebSocket : public ajit::Sandbox {
protected:
    ajtest::TempDir scratch{"aj-ws"};
    ajnet::Cert cert =
        ajnet::make_cert(scratch.path() + "/ca.crt", scratch.path() + "/key.pem", {"api.test"});
    TestServer api{{"api", &cert}};
    std::string port = std::to_string(api.port());
    std::string log_path = scratch.path() + "/net.jsonl";

    void SetUp() override {
        if (!ajtest::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 on this host";
        jail.ws_dir().write("wsclient.py", kClient);
    }

    // A policy pinning api.test to the server, with `extra` TOML after it.
    std::string policy(const std::string& extra) {
        NetPolicy p;
        p.hosts = {{"api.test", "127.0.0.1"}};
        p.extra = extra;
        return scratch.write("ws.toml", ajnet::toml(p));
    }

    std::string secret_policy(const std::string& more = "") {
        return policy(
            "\n[secrets]\nAPI_KEY = { source = \"env:AJ_TEST_WS_SECRET\", hosts = [\"api.test:" +
            port + "\"] }\n" + more);
    }

    // Runs the client inside with the test CA trusted by the proxy (SSL_CERT_FILE in
    // agentjail's environment) and the secret's value in agentjail's environment.
    ajtest::RunOutput client(const std::string& pol, const std::string& args,
                             const std::string& value, const std::string& env_inside = "") {
        std::vector<std::string> argv = jail.base();
        argv.insert(argv.end(), {"-p", pol, "--net-log", log_path, "--", "/bin/bash", "-c",
                                 env_inside + " /usr/bin/python3 wsclient.py " + args});
        ajtest::RunOptions o;
        o.timeout_ms = 60000;
        o.env = {"SSL_CERT_FILE=" + cert.cert_path, "AJ_TEST_WS_SECRET=" + value};
        return jail.run(argv, o);
    }
};

std::string line(const ajtest::RunOutput& r, const std::string& label) {
    for (const auto& l : ajtest::lines(r.out))
        if (l.rfind("R " + label + " ", 0) == 0) return ajtest::trim(l.substr(label.size() + 3));
    return "<missing>";
}

// Through an intercepted TLS tunnel: the upgrade passes, messages echo both ways, the
// placeholder in the handshake's Authorization reached the origin as the real value,
// and the origin's echo of that head comes back with the value masked (same length,
// so the frame stays valid). The log has the handshake with status 101.
TEST_F(NetworkWebSocket, UpgradeThroughAnInterceptedTunnelEchoesWithTheSecretInjected) {
    const std::string value = ajit::unique_name("sk-ws-");
    auto r = client(secret_policy(), "tunnel api.test " + port + " /ws hello 'second message' head",
                    value);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(line(r, "connect"), "HTTP/1.1 200 Connection established") << describe(r);
    EXPECT_EQ(line(r, "status"), "101") << describe(r);
    EXPECT_EQ(line(r, "msg 0"), "hello") << describe(r);
    EXPECT_EQ(line(r, "msg 1"), "second message") << describe(r);
    EXPECT_EQ(line(r, "closed"), "8") << describe(r);
    ASSERT_EQ(api.requests().size(), 1u) << describe(r);
    const std::string head = api.requests()[0].head;  // requests() returns a copy
    EXPECT_TRUE(ajtest::contains(head, "Authorization: Bearer " + value)) << head;
    EXPECT_TRUE(ajtest::contains(head, "Upgrade: websocket")) << head;
    // The echoed head: the value masked (the mask starts like the placeholder).
    std::string echoed = line(r, "msg 2");
    EXPECT_FALSE(ajtest::contains(r.out, value)) << describe(r);
    EXPECT_TRUE(ajtest::contains(echoed, "Authorization: Bearer agentjail-secret")) << echoed;
    EXPECT_TRUE(ajtest::contains(echoed, "GET /ws HTTP/1.1")) << echoed;
    bool logged = false;
    for (const auto& e : ajnet::log_entries(ajnet::read_log(log_path), "api.test", "allow"))
        logged = logged || (e.value("status", 0) == 101 && e.value("path", "") == "/ws" &&
                            e.value("intercepted", "") == "tls");
    EXPECT_TRUE(logged) << ajnet::dump(ajnet::read_log(log_path));
    EXPECT_FALSE(ajtest::contains(ajtest::read_file(log_path), value));
}

// Absolute-form through HTTP_PROXY to a secret's host: the handshake goes upstream
// over TLS with the value put in, and the connection then relays frames.
TEST_F(NetworkWebSocket, UpgradeAsPlainHttpThroughTheProxy) {
    const std::string value = ajit::unique_name("sk-wsp-");
    auto r = client(secret_policy(), "plain api.test " + port + " /ws hi", value);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(line(r, "status"), "101") << describe(r);
    EXPECT_EQ(line(r, "msg 0"), "hi") << describe(r);
    EXPECT_EQ(line(r, "closed"), "8") << describe(r);
    ASSERT_EQ(api.requests().size(), 1u) << describe(r);
    EXPECT_TRUE(ajtest::contains(api.requests()[0].head, "Authorization: Bearer " + value))
        << api.requests()[0].head;
}

// The handshake is a request like any other: a path the rules do not allow gets the
// proxy's 403 and never reaches the origin; the allowed path upgrades.
TEST_F(NetworkWebSocket, UpgradeToADeniedPathGets403) {
    NetPolicy p;
    p.hosts = {{"api.test", "127.0.0.1"}};
    p.allow_toml = {"{ host = \"api.test:" + port + "\", methods = [\"GET\"], paths = [\"/ws\"] }"};
    std::string pol = scratch.write("ws-rules.toml", ajnet::toml(p));
    auto r = client(pol, "tunnel api.test " + port + " /admin", "unused");
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(line(r, "status"), "403") << describe(r);
    EXPECT_TRUE(
        ajtest::contains(line(r, "body"), "agentjail: refused by policy: GET api.test:" + port + "/admin is refused"))
        << describe(r);
    EXPECT_EQ(api.requests().size(), 0u);
    // Positive control: the same client, the allowed path.
    auto ok = client(pol, "tunnel api.test " + port + " /ws ping", "unused");
    ASSERT_EQ(ok.status, 0) << describe(ok);
    EXPECT_EQ(line(ok, "status"), "101") << describe(ok);
    EXPECT_EQ(line(ok, "msg 0"), "ping") << describe(ok);
}

// Attacks on the switch. A 101 whose Sec-WebSocket-Accept does not answer the key, or
// a 101 to a request that asked for no upgrade, is a 502: the proxy never relays blind
// what follows (here bytes shaped like a response). A request sent right behind the
// handshake, before its answer, is refused (it would go unchecked into the stream).
TEST_F(NetworkWebSocket, ASwitchThatDoesNotAnswerTheHandshakeIsRefused) {
    auto r = client(secret_policy(), "tunnel api.test " + port + " /ws-wrong-accept", "v1");
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(line(r, "status"), "502") << describe(r);
    EXPECT_TRUE(ajtest::contains(line(r, "body"), "Sec-WebSocket-Accept")) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, "smuggled")) << describe(r);
    // A 101 to a plain GET (curl asks for no upgrade).
    std::vector<std::string> argv = jail.base();
    argv.insert(argv.end(),
                {"-p", secret_policy(), "--", "/bin/bash", "-c",
                 "curl -sS --max-time 15 -w '\\nR code %{http_code}\\n' https://api.test:" + port +
                     "/switch"});
    ajtest::RunOptions o;
    o.timeout_ms = 60000;
    o.env = {"SSL_CERT_FILE=" + cert.cert_path, "AJ_TEST_WS_SECRET=v2"};
    auto c = jail.run(argv, o);
    EXPECT_EQ(line(c, "code"), "502") << describe(c);
    EXPECT_TRUE(ajtest::contains(c.out, "unexpected protocol switch")) << describe(c);
    EXPECT_FALSE(ajtest::contains(c.out, "smuggled")) << describe(c);
    // Pipelined: a second request right behind the handshake, in the same write.
    auto p = client(secret_policy(), "tunnel api.test " + port + " /ws", "v3",
                    "WS_EXTRA='GET /admin HTTP/1.1\\r\\nHost: api.test:" + port + "\\r\\n\\r\\n'");
    ASSERT_EQ(p.status, 0) << describe(p);
    EXPECT_EQ(line(p, "status"), "400") << describe(p);
    EXPECT_TRUE(ajtest::contains(line(p, "body"), "bytes after a WebSocket handshake"))
        << describe(p);
    EXPECT_EQ(api.requests().size(), 2u);  // the /ws-wrong-accept and /switch requests only
}

// A non-101 answer to a handshake (here the origin ignores the upgrade and answers
// 200) is an HTTP response like any other: the connection goes on as HTTP, and the
// next request on it is checked and answered.
TEST_F(NetworkWebSocket, ANon101AnswerContinuesAsHttp) {
    TestServer ka({"keepalive", &cert, false, true});
    std::string kp = std::to_string(ka.port());
    NetPolicy p;
    p.hosts = {{"api.test", "127.0.0.1"}};
    p.allow_toml = {"{ host = \"api.test:" + kp + "\", methods = [\"GET\"] }"};
    std::string pol = scratch.write("ws-ka.toml", ajnet::toml(p));
    auto r = client(pol, "tunnel api.test " + kp + " /hello", "unused", "WS_THEN_GET=1");
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(line(r, "status"), "200") << describe(r);
    EXPECT_EQ(line(r, "body"), "hello from keepalive|") << describe(r);
    EXPECT_EQ(line(r, "second"), "200") << describe(r);
    ASSERT_EQ(ka.requests().size(), 2u) << describe(r);
    EXPECT_TRUE(ajtest::contains(ka.requests()[0].head, "Upgrade: websocket"))
        << ka.requests()[0].head;
}

}  // namespace

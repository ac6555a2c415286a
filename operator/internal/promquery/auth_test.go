package promquery

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"napwake.dev/operator/internal/config"
)

// seen is what a test server received with its queries.
type seen struct {
	mu      sync.Mutex
	queries int
	auth    []string
	tenants []string
	clients []string // the verified client certificates' common names
}

func (s *seen) note(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries++
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.tenants = append(s.tenants, r.Header.Get("X-Scope-OrgID"))
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		s.clients = append(s.clients, r.TLS.VerifiedChains[0][0].Subject.CommonName)
	}
}

func (s *seen) last() (auth, tenant string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queries == 0 {
		return "", ""
	}
	return s.auth[len(s.auth)-1], s.tenants[len(s.tenants)-1]
}

// prometheusWanting answers "1" to the requests allow lets through and 401
// to the others, as Prometheus behind an authenticating proxy, or Mimir
// without a tenant, does.
func prometheusWanting(s *seen, allow func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.note(r)
		if r.URL.Path != "/api/v1/query" || r.FormValue("query") != "sum(queue_length)" {
			http.NotFound(w, r)
			return
		}
		if !allow(r) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(vector("1")))
	})
}

// clientFrom builds the Client as the operator does: the flags through
// config's strict reading, then New.
func clientFrom(t *testing.T, url, httpConfig string) *Client {
	t.Helper()
	cfg := config.Config{PrometheusURL: url, PrometheusHTTPConfig: httpConfig}
	hc, err := cfg.PrometheusHTTPClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(url, hc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeFiles writes name -> content under dir, as a mounted Secret's keys.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func wantActive(t *testing.T, c *Client) {
	t.Helper()
	if active, err := c.Active(context.Background(), "sum(queue_length)"); err != nil || !active {
		t.Fatalf("Active = %v, %v; want true", active, err)
	}
}

func want401(t *testing.T, c *Client) {
	t.Helper()
	active, err := c.Active(context.Background(), "sum(queue_length)")
	if active || err == nil || !strings.Contains(err.Error(), "401 Unauthorized") || !strings.Contains(err.Error(), "--prometheus-http-config") {
		t.Fatalf("Active = %v, %v; want false and an error naming 401 and --prometheus-http-config", active, err)
	}
}

// A bearer token file is sent as Authorization: Bearer, read again at each
// query: a rotated Secret takes effect without a restart.
func TestABearerTokenFromAFile(t *testing.T) {
	s := &seen{}
	token := "s3cret"
	var mu sync.Mutex
	srv := httptest.NewServer(prometheusWanting(s, func(r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		return r.Header.Get("Authorization") == "Bearer "+token
	}))
	defer srv.Close()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"http.yaml": "authorization:\n  credentials_file: token\n", "token": "s3cret\n"})
	c := clientFrom(t, srv.URL, filepath.Join(dir, "http.yaml"))
	wantActive(t, c)
	if auth, _ := s.last(); auth != "Bearer s3cret" {
		t.Fatalf("the server received Authorization %q, want the file's token", auth)
	}

	mu.Lock()
	token = "rotated"
	mu.Unlock()
	want401(t, c)
	writeFiles(t, dir, map[string]string{"token": "rotated"})
	wantActive(t, c)
	if auth, _ := s.last(); auth != "Bearer rotated" {
		t.Fatalf("after the rotation the server received %q, want the new token", auth)
	}
}

// basic_auth with a password_file, in the deprecated bearer_token_file's
// place.
func TestBasicAuthWithAPasswordFile(t *testing.T) {
	s := &seen{}
	srv := httptest.NewServer(prometheusWanting(s, func(r *http.Request) bool {
		user, pass, ok := r.BasicAuth()
		return ok && user == "napwake" && pass == "hunter2"
	}))
	defer srv.Close()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"http.yaml": "basic_auth:\n  username: napwake\n  password_file: password\n", "password": "hunter2"})
	wantActive(t, clientFrom(t, srv.URL, filepath.Join(dir, "http.yaml")))
	if auth, _ := s.last(); auth != "Basic bmFwd2FrZTpodW50ZXIy" { // napwake:hunter2
		t.Fatalf("the server received Authorization %q, want napwake's basic auth", auth)
	}

	writeFiles(t, dir, map[string]string{"password": "wrong"})
	want401(t, clientFrom(t, srv.URL, filepath.Join(dir, "http.yaml")))
}

// A tenant header, as Mimir, Cortex and Thanos's tenancy want.
func TestATenantHeader(t *testing.T) {
	s := &seen{}
	srv := httptest.NewServer(prometheusWanting(s, func(r *http.Request) bool {
		return r.Header.Get("X-Scope-OrgID") == "team-a"
	}))
	defer srv.Close()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"http.yaml":  "http_headers:\n  X-Scope-OrgID:\n    values: [team-a]\n",
		"wrong.yaml": "http_headers:\n  X-Scope-OrgID:\n    values: [team-b]\n",
	})
	wantActive(t, clientFrom(t, srv.URL, filepath.Join(dir, "http.yaml")))
	if _, tenant := s.last(); tenant != "team-a" {
		t.Fatalf("the server received X-Scope-OrgID %q, want team-a", tenant)
	}
	want401(t, clientFrom(t, srv.URL, filepath.Join(dir, "wrong.yaml")))
}

// Mutual TLS against a server whose certificate only a custom CA signs:
// the server sees the client certificate; without one it answers 401, and
// a client that does not trust the custom CA refuses the server.
func TestMutualTLSWithACustomCA(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "napwake test CA")
	serverCert := ca.issue(t, "prometheus", x509.ExtKeyUsageServerAuth)
	client := ca.issue(t, "napwake-operator", x509.ExtKeyUsageClientAuth)
	writeFiles(t, dir, map[string]string{
		"ca.crt":      ca.certPEM,
		"tls.crt":     client.certPEM,
		"tls.key":     client.keyPEM,
		"mtls.yaml":   "tls_config:\n  ca_file: ca.crt\n  cert_file: tls.crt\n  key_file: tls.key\n",
		"nocert.yaml": "tls_config:\n  ca_file: ca.crt\n",
		"noca.yaml":   "tls_config:\n  cert_file: tls.crt\n  key_file: tls.key\n",
	})

	s := &seen{}
	srv := httptest.NewUnstartedServer(prometheusWanting(s, func(r *http.Request) bool {
		return len(r.TLS.VerifiedChains) > 0
	}))
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{serverCert.pair(t)},
		ClientCAs:    pool,
		ClientAuth:   tls.VerifyClientCertIfGiven,
		MinVersion:   tls.VersionTLS12,
	}
	srv.StartTLS()
	defer srv.Close()

	wantActive(t, clientFrom(t, srv.URL, filepath.Join(dir, "mtls.yaml")))
	s.mu.Lock()
	clients := s.clients
	s.mu.Unlock()
	if len(clients) != 1 || clients[0] != "napwake-operator" {
		t.Fatalf("the server verified client certificates %q, want napwake-operator's", clients)
	}
	want401(t, clientFrom(t, srv.URL, filepath.Join(dir, "nocert.yaml")))

	active, err := clientFrom(t, srv.URL, filepath.Join(dir, "noca.yaml")).Active(context.Background(), "sum(queue_length)")
	if active || err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Active = %v, %v; want false and a certificate error", active, err)
	}
}

// testCA signs certificates for 127.0.0.1, the test servers' address.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM string
}

type issued struct{ certPEM, keyPEM string }

func (i issued) pair(t *testing.T) tls.Certificate {
	t.Helper()
	p, err := tls.X509KeyPair([]byte(i.certPEM), []byte(i.keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func template(t *testing.T, cn string) *x509.Certificate {
	t.Helper()
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
}

func newCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := template(t, cn)
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, certPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

func (ca *testCA) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := template(t, cn)
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{usage}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return issued{
		certPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		keyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})),
	}
}

// follow_redirects: false is honoured (the API client would follow), and a
// Client from New gives up after Timeout.
func TestRedirectsFollowTheHTTPConfig(t *testing.T) {
	s := &seen{}
	target := httptest.NewServer(prometheusWanting(s, func(*http.Request) bool { return true }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"follow.yaml": "follow_redirects: true\n", "stay.yaml": "follow_redirects: false\n"})

	c := clientFrom(t, redirect.URL, filepath.Join(dir, "follow.yaml"))
	if c.HTTP == nil || c.HTTP.Timeout != Timeout {
		t.Fatalf("client %+v, want one with the %v timeout", c.HTTP, Timeout)
	}
	wantActive(t, c)
	active, err := clientFrom(t, redirect.URL, filepath.Join(dir, "stay.yaml")).Active(context.Background(), "sum(queue_length)")
	if active || err == nil || !strings.Contains(err.Error(), "307") {
		t.Fatalf("Active = %v, %v; want false and an error naming the 307", active, err)
	}
}

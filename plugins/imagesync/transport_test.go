package imagesync

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// writeCert writes a self-signed certificate for usage (valid for ip,
// when set) and its key (PEM) into dir as NAME.pem and NAME-key.pem, and
// returns it.
func writeCert(t *testing.T, dir, name string, ip net.IP, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{usage}, BasicConstraintsValid: true, IsCA: true}
	if ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	if err := os.WriteFile(filepath.Join(dir, name+".pem"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+"-key.pem"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A source registry speaking HTTPS with a certificate of its own CA and
// requiring a client certificate is read with the registry's ca_file,
// cert_file and key_file; without the CA the error names ca_file.
func TestASourceRegistryWithItsOwnCAAndAClientCertificate(t *testing.T) {
	dir := t.TempDir()
	client := writeCert(t, dir, "client", nil, x509.ExtKeyUsageClientAuth)
	server := writeCert(t, dir, "ca", net.ParseIP("127.0.0.5"), x509.ExtKeyUsageServerAuth)
	l, err := net.Listen("tcp", "127.0.0.5:0")
	if err != nil {
		t.Fatal(err)
	}
	clients := x509.NewCertPool()
	clients.AddCert(client.Leaf)
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ErrorLog: log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{server}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients}}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	host := l.Addr().String()

	cfg := Config{Registries: map[string]RegistryConfig{host: {CAFile: "ca.pem", CertFile: "client.pem", KeyFile: "client-key.pem"}}}
	tr, err := cfg.SourceTransport(host, dir)
	if err != nil {
		t.Fatal(err)
	}
	img := imageOf(t, layers(t, 2, 8<<10), nil)
	ref, _ := name.ParseReference(host + "/harness:v1")
	if err := remote.Write(ref, img, remote.WithTransport(tr.roundTripper())); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	art, err := Load(ctx, Source{Kind: SourceRegistry, Ref: host + "/harness:v1"}, tr)
	if err != nil {
		t.Fatal(err)
	}
	if art.Digest != mustDigest(t, img) {
		t.Errorf("loaded %s, want %s", art.Digest, mustDigest(t, img))
	}
	_, err = Load(ctx, Source{Kind: SourceRegistry, Ref: host + "/harness:v1"}, SourceTransport{})
	if err == nil || !strings.Contains(err.Error(), "ca_file") {
		t.Errorf("without the CA: %v, want an error naming ca_file", err)
	}
	bad := Config{Registries: map[string]RegistryConfig{host: {CertFile: "client.pem"}}}
	if _, err := bad.SourceTransport(host, dir); err == nil || !strings.Contains(err.Error(), "cert_file and key_file go together") {
		t.Errorf("a cert without its key: %v", err)
	}
}

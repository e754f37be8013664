// Package localtls gives a built-in plugin, a process poolc starts from
// its own executable, the certificates of its mutual TLS through a pipe
// the process inherits, in place of go-plugin's AutoMTLS. AutoMTLS has
// each side make a P-521 key and certificate and check P-521 signatures:
// 25-30 ms of CPU a plugin start, a third of the CPU of planning the
// bundled example. Here poolc makes two P-256 keys and certificates, its
// own and the plugin's, and writes the plugin's key, its certificate and
// poolc's certificate into the pipe: no key is in an environment or a
// file, and each side accepts only the other's certificate.
//
// External plugins keep AutoMTLS: one built with an older SDK does not
// read the pipe.
package localtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"
)

// EnvFD names the environment variable that tells the plugin which of its
// file descriptors is the pipe.
const EnvFD = "POOLC_PLUGIN_TLS_FD"

// serverName is the name both certificates carry and the client asks for.
const serverName = "localhost"

// maxMaterial bounds what the plugin reads from the pipe: two
// certificates and a key are about 2 KB.
const maxMaterial = 64 << 10

// Attach makes the certificates of one start of cmd, a built-in plugin
// not yet started: it gives cmd the read end of a pipe holding the
// plugin's key and certificates (cmd.ExtraFiles, named by EnvFD in
// cmd.Env, to which go-plugin adds poolc's environment), and returns
// poolc's TLS configuration and a release that closes poolc's copy of
// the pipe, to call once cmd started or failed to.
func Attach(cmd *exec.Cmd) (config *tls.Config, release func(), err error) {
	client, clientPEM, _, err := newCert()
	if err != nil {
		return nil, nil, err
	}
	server, serverPEM, serverKeyPEM, err := newCert()
	if err != nil {
		return nil, nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	// The material (about 2 KB) fits in the pipe's buffer, so the write
	// does not wait for the plugin to read.
	_, err = w.Write(slices.Concat(serverPEM, serverKeyPEM, clientPEM))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("writing the plugin's certificates: %w", err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	cmd.Env = append(cmd.Env, EnvFD+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	roots := x509.NewCertPool()
	roots.AddCert(server.Leaf)
	config = &tls.Config{
		Certificates: []tls.Certificate{client},
		RootCAs:      roots,
		ServerName:   serverName,
		MinVersion:   tls.VersionTLS13,
	}
	return config, func() { r.Close() }, nil
}

// Server is the plugin's TLS configuration, read from the pipe EnvFD
// names, which it closes; nil and no error when EnvFD is not set (poolc
// asked for AutoMTLS, or for nothing).
func Server() (*tls.Config, error) {
	v, ok := os.LookupEnv(EnvFD)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(EnvFD) // not for the programs the plugin runs
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: want a file descriptor above 2", EnvFD, v)
	}
	f := os.NewFile(uintptr(fd), "poolc-tls")
	if f == nil {
		return nil, fmt.Errorf("%s=%d: not an open file", EnvFD, fd)
	}
	defer f.Close()
	return serverFrom(f)
}

// serverFrom reads the plugin's key and certificates from r.
func serverFrom(r io.Reader) (*tls.Config, error) {
	material, err := io.ReadAll(io.LimitReader(r, maxMaterial))
	if err != nil {
		return nil, fmt.Errorf("reading poolc's certificates: %w", err)
	}
	var blocks []*pem.Block
	for len(blocks) < 3 {
		var b *pem.Block
		if b, material = pem.Decode(material); b == nil {
			break
		}
		blocks = append(blocks, b)
	}
	if len(blocks) != 3 || blocks[0].Type != "CERTIFICATE" || blocks[1].Type != "EC PRIVATE KEY" || blocks[2].Type != "CERTIFICATE" {
		return nil, errors.New("poolc's certificates: want a certificate, its key and poolc's certificate")
	}
	cert, err := tls.X509KeyPair(pem.EncodeToMemory(blocks[0]), pem.EncodeToMemory(blocks[1]))
	if err != nil {
		return nil, fmt.Errorf("the plugin's certificate: %w", err)
	}
	client, err := x509.ParseCertificate(blocks[2].Bytes)
	if err != nil {
		return nil, fmt.Errorf("poolc's certificate: %w", err)
	}
	clients := x509.NewCertPool()
	clients.AddCert(client)
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clients,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// newCert makes a P-256 key and a self-signed certificate for serverName,
// valid for client and server authentication, and returns them as a
// tls.Certificate (Leaf set) and in PEM.
func newCert() (cert tls.Certificate, certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: serverName, Organization: []string{"poolc"}},
		DNSNames:              []string{serverName},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour), // as long as a plugin may run
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

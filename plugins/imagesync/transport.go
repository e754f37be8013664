package imagesync

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// RegistryConfig is how the plugin speaks to one source registry: an
// entry of the config's registries, keyed by the registry as image
// references name it (HOST or HOST:PORT). PlainHTTP allows plain HTTP
// (never assumed for a registry not named here, except the loopback
// names go-containerregistry treats so: localhost and 127.0.0.1);
// CAFile adds a CA certificate (PEM) to the system's roots; CertFile and
// KeyFile are a client certificate and its key (PEM), given together.
// Relative paths are resolved from the pool's directory.
type RegistryConfig struct {
	PlainHTTP bool   `json:"plain_http,omitempty"`
	CAFile    string `json:"ca_file,omitempty"`
	CertFile  string `json:"cert_file,omitempty"`
	KeyFile   string `json:"key_file,omitempty"`
}

// SourceTransport is how Load reaches a registry source: PlainHTTP allows
// plain HTTP; TLS, when set, verifies the registry and presents a client
// certificate (nil: the system's roots, no client certificate).
type SourceTransport struct {
	PlainHTTP bool
	TLS       *tls.Config
}

// SourceTransport returns the transport settings of the source registry
// named registry (HOST or HOST:PORT), reading its CA and client
// certificate files from dir when relative.
func (c Config) SourceTransport(registry, dir string) (SourceTransport, error) {
	rc, ok := c.Registries[registry]
	if !ok {
		return SourceTransport{}, nil
	}
	t := SourceTransport{PlainHTTP: rc.PlainHTTP}
	if rc.CAFile == "" && rc.CertFile == "" && rc.KeyFile == "" {
		return t, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if rc.CAFile != "" {
		pem, err := os.ReadFile(resolve(dir, rc.CAFile))
		if err != nil {
			return t, fmt.Errorf("registries.%q.ca_file: %w", registry, err)
		}
		roots, err := x509.SystemCertPool()
		if err != nil || roots == nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return t, fmt.Errorf("registries.%q.ca_file %s: no PEM certificate in it", registry, rc.CAFile)
		}
		cfg.RootCAs = roots
	}
	if (rc.CertFile == "") != (rc.KeyFile == "") {
		return t, fmt.Errorf("registries.%q: cert_file and key_file go together", registry)
	}
	if rc.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(resolve(dir, rc.CertFile), resolve(dir, rc.KeyFile))
		if err != nil {
			return t, fmt.Errorf("registries.%q: client certificate: %w", registry, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	t.TLS = cfg
	return t, nil
}

// roundTripper is the HTTP transport to a source registry, every phase
// of a request bounded in time (a blob's body is bounded by its
// request's context).
func (t SourceTransport) roundTripper() *http.Transport {
	rt := boundedTransport()
	rt.Proxy = http.ProxyFromEnvironment
	rt.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	rt.TLSClientConfig = t.TLS
	rt.ResponseHeaderTimeout = 30 * time.Second
	return rt
}

// dialTimeout bounds a connection to a registry, source or destination.
const dialTimeout = 10 * time.Second

// boundedTransport is the HTTP transport to a registry, source or
// destination, before what only one of them needs: the TLS handshake and
// the wait for "100 Continue" bounded in time, and a few idle connections
// kept per host for the next blob.
func boundedTransport() *http.Transport {
	return &http.Transport{
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// sourceHint adds to err, from reading registry, the setting that may
// fix it: plain_http for a registry that answered HTTPS with HTTP, ca_file
// for a certificate signed by an unknown authority.
func sourceHint(err error, registry string) error {
	var ua x509.UnknownAuthorityError
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("%w (registry %s speaks plain HTTP: allow it with registries = { %q = { plain_http = true } } in the image-sync plugin's config)", err, registry, registry)
	case errors.As(err, &ua):
		return fmt.Errorf("%w (give the CA that signed registry %s's certificate with registries = { %q = { ca_file = \"ca.pem\" } } in the image-sync plugin's config)", err, registry, registry)
	}
	return err
}

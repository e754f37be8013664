package testkube

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// secrets are the files an API server and its controllers share: a CA and
// the serving certificate it signs (for 127.0.0.1), the service-account
// signing key and the static token of the admin user.
type secrets struct {
	CA, ServerCert, ServerKey string
	SAKey, SAPub              string
	TokenFile                 string
	Token                     string
}

func writeSecrets(dir string) (secrets, error) {
	s := secrets{
		CA:         filepath.Join(dir, "ca.crt"),
		ServerCert: filepath.Join(dir, "apiserver.crt"),
		ServerKey:  filepath.Join(dir, "apiserver.key"),
		SAKey:      filepath.Join(dir, "sa.key"),
		SAPub:      filepath.Join(dir, "sa.pub"),
		TokenFile:  filepath.Join(dir, "tokens.csv"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return s, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "poolc-testkube-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return s, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return s, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return s, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1)},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return s, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return s, err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return s, err
	}
	s.Token = hex.EncodeToString(tok)
	files := []struct {
		path string
		data []byte
	}{
		{s.CA, pemBlock("CERTIFICATE", caDER)},
		{s.ServerCert, pemBlock("CERTIFICATE", srvDER)},
		{s.ServerKey, ecKeyPEM(srvKey)},
		{s.SAKey, ecKeyPEM(saKey)},
		{s.SAPub, pubPEM(&saKey.PublicKey)},
		// token,user,uid,"groups": the admin is in system:masters.
		{s.TokenFile, []byte(s.Token + `,poolc-admin,poolc-admin,"system:masters"` + "\n")},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return s, err
		}
	}
	return s, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func ecKeyPEM(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil { // a P-256 key always marshals
		panic(err)
	}
	return pemBlock("EC PRIVATE KEY", der)
}

func pubPEM(k *ecdsa.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		panic(err)
	}
	return pemBlock("PUBLIC KEY", der)
}

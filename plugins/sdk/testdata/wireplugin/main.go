// Command wireplugin is an actuator plugin written from docs/PLUGINS.md
// alone, as an author in another language would: it uses only gRPC, the
// generated stubs of actuator.proto and the standard library, neither
// go-plugin nor the SDK. It checks the magic cookie and the protocol
// versions, listens on TCP in the port range, makes its own certificate,
// serves gRPC with mutual TLS, the health service and the Actuator
// service, and prints the handshake line. Its one step kind, "route", is
// carried out by waiting for cancellation after a progress report, so the
// conformance checks can see progress, results and cancellation.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "poolc.dev/poolc/plugins/proto/actuatorv3"
)

// The values docs/PLUGINS.md gives; written out, not imported, on purpose.
const (
	cookieKey   = "POOLC_PLUGIN"
	cookieValue = "137152e22e0525f0e01901d8e1a24057c6d15665dbb8bc7b"
	protocol    = "3"
)

func main() {
	if os.Getenv(cookieKey) != cookieValue {
		fmt.Fprintln(os.Stderr, "wireplugin is a poolc plugin; poolc starts it")
		os.Exit(1)
	}
	if !slices.Contains(strings.Split(os.Getenv("PLUGIN_PROTOCOL_VERSIONS"), ","), protocol) {
		fmt.Fprintln(os.Stderr, "wireplugin speaks actuator protocol "+protocol+" only")
		os.Exit(1)
	}
	signal.Ignore(os.Interrupt)
	lis, err := listen()
	if err != nil {
		fail(err)
	}
	der, creds, err := serverTLS(os.Getenv("PLUGIN_CLIENT_CERT"))
	if err != nil {
		fail(err)
	}
	srv := grpc.NewServer(grpc.Creds(creds))
	hs := health.NewServer()
	hs.SetServingStatus("plugin", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	pb.RegisterActuatorServer(srv, &actuator{})
	fmt.Printf("1|%s|tcp|%s|grpc|%s\n", protocol, lis.Addr(), base64.RawStdEncoding.EncodeToString(der))
	go exitWithParent(os.Getppid())
	if err := srv.Serve(lis); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "wireplugin:", err)
	os.Exit(1)
}

// listen listens on 127.0.0.1 at the first free port of the range.
func listen() (net.Listener, error) {
	lo, err1 := strconv.Atoi(os.Getenv("PLUGIN_MIN_PORT"))
	hi, err2 := strconv.Atoi(os.Getenv("PLUGIN_MAX_PORT"))
	if err1 != nil || err2 != nil || lo > hi {
		return nil, fmt.Errorf("no port range in PLUGIN_MIN_PORT and PLUGIN_MAX_PORT")
	}
	for port := lo; port <= hi; port++ {
		if lis, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			return lis, nil
		}
	}
	return nil, fmt.Errorf("no free port in %d..%d", lo, hi)
}

// serverTLS makes a self-signed CA certificate for localhost and the TLS
// settings that require a client certificate signed by clientPEM.
func serverTLS(clientPEM string) ([]byte, credentials.TransportCredentials, error) {
	clients := x509.NewCertPool()
	if !clients.AppendCertsFromPEM([]byte(clientPEM)) {
		return nil, nil, fmt.Errorf("PLUGIN_CLIENT_CERT holds no certificate")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clients,
		MinVersion:   tls.VersionTLS12,
	}
	return der, credentials.NewTLS(cfg), nil
}

// exitWithParent exits once the process that started this one is gone.
func exitWithParent(parent int) {
	for range time.Tick(time.Second) {
		if os.Getppid() != parent {
			os.Exit(1)
		}
	}
}

// actuator is the Actuator service on the generated messages.
type actuator struct {
	pb.UnimplementedActuatorServer
}

func errorDiag(summary string) []*pb.Diagnostic {
	return []*pb.Diagnostic{{Severity: pb.Severity_SEVERITY_ERROR, Summary: summary}}
}

func (*actuator) Describe(context.Context, *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	return &pb.DescribeResponse{Name: "wire", Version: "0.0.1", StepKinds: []string{"route"},
		Capabilities: &pb.Capabilities{Observes: []string{"routes"}}}, nil
}

func (*actuator) Configure(_ context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	var obj map[string]any
	if err := json.Unmarshal(req.GetConfigJson(), &obj); err != nil {
		return &pb.ConfigureResponse{Diagnostics: errorDiag("the config block is not a JSON object: " + err.Error())}, nil
	}
	return &pb.ConfigureResponse{}, nil
}

func (*actuator) Observe(context.Context, *pb.ObserveRequest) (*pb.ObserveResponse, error) {
	return &pb.ObserveResponse{Fleet: &pb.Fleet{}}, nil
}

func (*actuator) Apply(req *pb.ApplyRequest, stream pb.Actuator_ApplyServer) error {
	result := func(r *pb.Result) error { return stream.Send(&pb.ApplyEvent{Event: &pb.ApplyEvent_Result{Result: r}}) }
	if kind := req.GetStep().GetKind(); kind != "route" {
		return result(&pb.Result{Diagnostics: errorDiag(fmt.Sprintf("wireplugin does not carry out %q steps", kind))})
	}
	if err := stream.Send(&pb.ApplyEvent{Event: &pb.ApplyEvent_Progress{Progress: &pb.Progress{Message: "routing " + req.GetStep().GetRoute().GetAlias(), Fraction: 0.5}}}); err != nil {
		return err
	}
	select {
	case <-stream.Context().Done():
		return result(&pb.Result{Retryable: true, Diagnostics: errorDiag("cancelled")})
	case <-time.After(time.Minute):
		return result(&pb.Result{})
	}
}

package sdk

import (
	"context"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// echo configures by answering with the size of what it got.
type echo struct{ Actuator }

func (echo) Configure(_ context.Context, req ConfigureRequest) ConfigureResponse {
	return ConfigureResponse{Diagnostics: Diagnostics{{Severity: Warning, Summary: strings.Repeat("x", len(req.ConfigJSON))}}}
}

// A 15 MB value (a lane argument under the 16 MiB pool limit) goes to a
// plugin and back through the options poolc and Serve use: it failed with
// "grpc: received message larger than max (15000202 vs. 4194304)".
func TestMessagesOfAWholePoolGetThrough(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpcServer(nil)
	if err := (&GRPCPlugin{Impl: echo{}}).GRPCServer(nil, srv); err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), append(DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw, _ := (&GRPCPlugin{}).GRPCClient(context.Background(), nil, conn)
	big := `{"arg":"` + strings.Repeat("a", 15_000_000) + `"}`
	resp := raw.(Actuator).Configure(context.Background(), ConfigureRequest{ConfigJSON: []byte(big)})
	if len(resp.Diagnostics) != 1 || len(resp.Diagnostics[0].Summary) != len(big) {
		for _, d := range resp.Diagnostics {
			t.Errorf("%.300s", d.Summary)
		}
		t.Fatal("the 15 MB config did not get there and back")
	}
}

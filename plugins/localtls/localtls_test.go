package localtls

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// attach is Attach for a command that is never started: the plugin side
// reads the pipe the command would have inherited.
func attach(t *testing.T) (client, server *tls.Config, cmd *exec.Cmd) {
	t.Helper()
	cmd = exec.Command("true")
	client, release, err := Attach(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if len(cmd.ExtraFiles) != 1 || len(cmd.Env) != 1 || cmd.Env[0] != EnvFD+"=3" {
		t.Fatalf("the command gets files %v and environment %q, want one pipe at descriptor 3", cmd.ExtraFiles, cmd.Env)
	}
	if server, err = serverFrom(cmd.ExtraFiles[0]); err != nil {
		t.Fatal(err)
	}
	return client, server, cmd
}

// handshake runs a TLS handshake between client and server configs over
// loopback TCP (buffered, so neither side's alert waits for the other to
// read) and returns each side's error.
func handshake(t *testing.T, client, server *tls.Config) (clientErr, serverErr error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		s, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		defer s.Close()
		s.SetDeadline(time.Now().Add(10 * time.Second))
		srv := tls.Server(s, server)
		if err = srv.Handshake(); err == nil {
			_, err = srv.Read(make([]byte, 1)) // a TLS 1.3 server sees the client's certificate checked by now
		}
		done <- err
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	cli := tls.Client(c, client)
	if clientErr = cli.Handshake(); clientErr == nil {
		if _, clientErr = cli.Write([]byte{1}); clientErr == nil {
			_, clientErr = cli.Read(make([]byte, 1)) // the server's alert, or its close
			if errors.Is(clientErr, io.EOF) {
				clientErr = nil
			}
		}
	}
	c.Close()
	return clientErr, <-done
}

// poolc and its plugin accept each other, and only each other: another
// start's client is refused by this plugin, and this poolc refuses
// another start's plugin.
func TestEachSideAcceptsOnlyTheOther(t *testing.T) {
	client, server, _ := attach(t)
	if cerr, serr := handshake(t, client, server); cerr != nil || serr != nil {
		t.Fatalf("poolc and its plugin: client %v, server %v", cerr, serr)
	}
	otherClient, otherServer, _ := attach(t)
	if _, serr := handshake(t, otherClient, server); serr == nil {
		t.Error("the plugin accepted the client of another start")
	}
	if cerr, _ := handshake(t, client, otherServer); cerr == nil || !strings.Contains(cerr.Error(), "certificate") {
		t.Errorf("poolc accepted the plugin of another start: %v", cerr)
	}
	noCert := client.Clone()
	noCert.Certificates = nil
	if _, serr := handshake(t, noCert, server); serr == nil {
		t.Error("the plugin accepted a client without a certificate")
	}
}

// Without EnvFD the plugin side has no configuration of its own (go-plugin
// then does what poolc asked: AutoMTLS); a bad EnvFD is an error, and the
// variable is gone once read, so the programs the plugin runs do not see it.
func TestServerReadsThePipeEnvFDNames(t *testing.T) {
	t.Setenv(EnvFD, "")
	os.Unsetenv(EnvFD)
	if c, err := Server(); c != nil || err != nil {
		t.Errorf("Server() without %s = %v, %v", EnvFD, c, err)
	}
	for _, v := range []string{"x", "1", "-4"} {
		t.Setenv(EnvFD, v)
		if _, err := Server(); err == nil || !strings.Contains(err.Error(), EnvFD) {
			t.Errorf("%s=%s: %v", EnvFD, v, err)
		}
		if _, still := os.LookupEnv(EnvFD); still {
			t.Errorf("%s=%s is still set after Server", EnvFD, v)
		}
	}
	if _, err := serverFrom(strings.NewReader("not PEM")); err == nil {
		t.Error("serverFrom took text that is not three PEM blocks")
	}
}

package etcdstore

import (
	"context"
	"strings"
	"testing"

	"poolc.dev/poolc/internal/testing/etcdtest"
	"poolc.dev/poolc/pools"
)

// Credentials come from the environment; a wrong password fails without
// the password in the message.
func TestCredentialsComeFromTheEnvironmentAndAreNeverPrinted(t *testing.T) {
	c := etcdtest.Start(t, 1)
	admin := c.Client(t)
	ctx := context.Background()
	const password = "s3cret-pass-7781"
	if _, err := admin.UserAdd(ctx, "root", password); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	sb := pools.StateBackend{Backend: "etcd", Endpoints: c.Endpoints()}

	t.Setenv(UsernameEnv, "root")
	t.Setenv(PasswordEnv, password)
	s, err := Open(sb, "lab", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(); err != nil {
		t.Fatalf("read with the right credentials: %v", err)
	}
	s.Close()

	t.Setenv(PasswordEnv, password+"-wrong")
	s, err = Open(sb, "lab", t.TempDir())
	if err == nil {
		_, err = s.Read()
		s.Close()
	}
	if err == nil {
		t.Fatal("a wrong password was accepted")
	}
	if strings.Contains(err.Error(), password) {
		t.Fatalf("the error prints the password: %v", err)
	}
}

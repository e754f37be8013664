package cli

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"poolc.dev/poolc/internal/testing/etcdtest"
	"poolc.dev/poolc/membership"
	"poolc.dev/poolc/runner/store"
	"poolc.dev/poolc/runner/store/etcdstore"
)

// TestEtcdScripts runs the scenarios in testdata/etcd, each against its
// own embedded etcd member on loopback, whose address is $ETCD. A file a
// script passes to expandenv has $ETCD (and other variables) replaced,
// for pool files that name the endpoint.
func TestEtcdScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/etcd",
		Setup: func(env *testscript.Env) error {
			dir, err := os.MkdirTemp("", "poolc-etcd-")
			if err != nil {
				return err
			}
			c, err := etcdtest.Launch(dir, 1)
			if err != nil {
				os.RemoveAll(dir)
				return err
			}
			env.Defer(func() { c.Close(); os.RemoveAll(dir) })
			env.Setenv("ETCD", c.Endpoints()[0])
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// expandenv FILE... replaces $VARIABLES in the files.
			"expandenv": func(ts *testscript.TestScript, neg bool, args []string) {
				for _, name := range args {
					data, err := os.ReadFile(ts.MkAbs(name))
					ts.Check(err)
					ts.Check(os.WriteFile(ts.MkAbs(name), []byte(os.Expand(string(data), ts.Getenv)), 0o644))
				}
			},
			// holdlock PREFIX OPERATION takes the state lock under PREFIX
			// as another runner would, until the script ends.
			"holdlock": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: holdlock PREFIX OPERATION")
				}
				cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ts.Getenv("ETCD")}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
				ts.Check(err)
				info := store.NewLockInfo(args[1], "test")
				info.ID, info.Who, info.Host, info.PID = "7e57", "ci@runner-2", "runner-2", 4242
				l, err := etcdstore.New(cli, args[0], 30).Acquire(context.Background(), info, nil)
				ts.Check(err)
				ts.Defer(func() { l.Unlock(); cli.Close() })
			},
			// envfile VAR FILE sets VAR to the content of FILE, trimmed.
			"envfile": func(ts *testscript.TestScript, neg bool, args []string) {
				data, err := os.ReadFile(ts.MkAbs(args[1]))
				ts.Check(err)
				ts.Setenv(args[0], strings.TrimSpace(string(data)))
			},
			// waitnode PREFIX NAME up|down waits up to a minute for node
			// NAME of the membership under PREFIX to be up or down.
			"waitnode": func(ts *testscript.TestScript, neg bool, args []string) {
				cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ts.Getenv("ETCD")}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
				ts.Check(err)
				defer cli.Close()
				r := membership.New(cli, args[0], 2)
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
					m, _ := r.Member(context.Background(), args[1])
					if m != nil && m.Live == (args[2] == "up") {
						return
					}
					if time.Now().After(deadline) {
						ts.Fatalf("node %s not %s after a minute", args[1], args[2])
					}
				}
			},
			// etcdkeys PREFIX prints the keys under PREFIX, one a line.
			"etcdkeys": func(ts *testscript.TestScript, neg bool, args []string) {
				cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ts.Getenv("ETCD")}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
				ts.Check(err)
				defer cli.Close()
				resp, err := cli.Get(context.Background(), args[0], clientv3.WithPrefix(), clientv3.WithKeysOnly())
				ts.Check(err)
				var keys []string
				for _, kv := range resp.Kvs {
					keys = append(keys, string(kv.Key))
				}
				ts.Stdout().Write([]byte(strings.Join(keys, "\n") + "\n"))
			},
		},
	})
}

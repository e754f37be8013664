package etcdstate

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"poolc.dev/poolc/internal/testing/etcdtest"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store/etcdstore"
)

// The environment of a stale writer: the test binary, run with
// staleWriterEnv set to a key prefix and staleEtcdEnv to an etcd address,
// reads the state under that prefix, says so on stdout ("read SERIAL"),
// waits until file descriptor 3 reaches its end, then writes the state
// with a node named after its pid added: it exits 0 when the write
// succeeded and 1, with the error on stderr, when it was refused.
const (
	staleWriterEnv = "POOLC_TEST_STALE_WRITER"
	staleEtcdEnv   = "POOLC_TEST_STALE_ETCD"
)

func staleWriter(prefix, endpoint string) int {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer cli.Close()
	s := etcdstore.New(cli, prefix, 5)
	st, err := s.Read()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Printf("read %d\n", st.Serial)
	io.Copy(io.Discard, os.NewFile(3, "barrier")) // until the parent closes it
	st.Nodes = append(st.Nodes, pools.NodeState{Name: fmt.Sprintf("writer-%d", os.Getpid())})
	if err := s.Write(st); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Two processes read the state from etcd, wait on one barrier (a pipe
// whose end reaches both at once), then both write: exactly one write
// succeeds, the other is refused with a message saying the state changed
// since it was read, and etcd holds the winner's state. Twenty trials.
func TestEtcdAStaleWriteIsRefused(t *testing.T) {
	if prefix := os.Getenv(staleWriterEnv); prefix != "" {
		os.Exit(staleWriter(prefix, os.Getenv(staleEtcdEnv)))
	}
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	const prefix, trials = "/stale/", 20
	s := etcdstore.New(cli, prefix, 5)
	first := &pools.State{FormatVersion: pools.StateFormatVersion, Pool: "stale"}
	if err := s.Write(first); err != nil {
		t.Fatal(err)
	}
	for trial := range trials {
		barrier, release, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var cmds [2]*exec.Cmd
		var stderr [2]bytes.Buffer
		var serials [2]string
		for i := range cmds {
			cmd := exec.Command(os.Args[0], "-test.run=^TestEtcdAStaleWriteIsRefused$", "-test.count=1")
			cmd.Env = append(os.Environ(), staleWriterEnv+"="+prefix, staleEtcdEnv+"="+c.Endpoints()[0])
			cmd.ExtraFiles = []*os.File{barrier}
			cmd.Stderr = &stderr[i]
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds[i] = cmd
			line, err := bufio.NewReader(out).ReadString('\n')
			if !strings.HasPrefix(line, "read ") {
				cmd.Wait()
				t.Fatalf("trial %d: writer %d: %q %v\n%s", trial, i, line, err, &stderr[i])
			}
			serials[i] = strings.TrimSpace(strings.TrimPrefix(line, "read "))
		}
		barrier.Close()
		release.Close() // both writers go
		won, refused := -1, 0
		for i, cmd := range cmds {
			err := cmd.Wait()
			switch {
			case err == nil:
				if won >= 0 {
					t.Fatalf("trial %d: both writes based on serial %s succeeded", trial, serials[0])
				}
				won = i
			case cmd.ProcessState.ExitCode() == 1:
				refused++
				if msg := stderr[i].String(); !strings.Contains(msg, "state "+prefix+"state changed in etcd since it was read") || !strings.Contains(msg, "refusing to overwrite it; read it again") {
					t.Errorf("trial %d: the refused write says: %s", trial, msg)
				}
			default:
				t.Fatalf("trial %d: writer %d: %v\n%s", trial, i, err, &stderr[i])
			}
		}
		if serials[0] != serials[1] {
			t.Fatalf("trial %d: the writers read serials %s and %s; they should read the same state", trial, serials[0], serials[1])
		}
		if won < 0 || refused != 1 {
			t.Fatalf("trial %d: %d writes succeeded, %d were refused; want exactly one of each", trial, won+1, refused)
		}
		st, err := s.Read()
		if err != nil {
			t.Fatal(err)
		}
		read, _ := strconv.ParseInt(serials[0], 10, 64)
		winner := fmt.Sprintf("writer-%d", cmds[won].Process.Pid)
		loser := fmt.Sprintf("writer-%d", cmds[1-won].Process.Pid)
		if st.Serial != read+1 || !hasNode(st, winner) || hasNode(st, loser) {
			t.Fatalf("trial %d: etcd holds serial %d with nodes %v; want serial %d with %s and without %s", trial, st.Serial, st.Nodes, read+1, winner, loser)
		}
	}
}

func hasNode(st *pools.State, name string) bool {
	for _, n := range st.Nodes {
		if n.Name == name {
			return true
		}
	}
	return false
}

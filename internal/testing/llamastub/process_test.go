package llamastub

import (
	"bufio"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBinaryStopsOnSIGTERM runs the built stand-in as a process, as poolc
// starts llama-server on a node, and stops it with a real SIGTERM.
func TestBinaryStopsOnSIGTERM(t *testing.T) {
	bin, err := Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--port", "0", "-m", modelFile(t, "m.gguf", 64), "--alias", "chat")
	cmd.Env = []string{EnvLinger + "=10ms"}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var url string
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), "listening on "); ok {
			url = strings.Fields(rest)[0]
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("never healthy")
		}
	}
	http.DefaultClient.CloseIdleConnections()
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
}

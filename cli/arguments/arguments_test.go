package arguments

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/compiler/cuefront"
	"poolc.dev/poolc/membership"
	"poolc.dev/poolc/plugins/kube/launch"
	"poolc.dev/poolc/runner"
)

// parse parses args into a fresh a, as the command table does.
func parse[A any, PA interface {
	*A
	Arguments
}](t *testing.T, args ...string) (PA, error) {
	t.Helper()
	a := PA(new(A))
	return a, Parse(FlagSet("test", a), a, args)
}

func TestDefaults(t *testing.T) {
	plan, err := parse[Plan](t)
	if err != nil {
		t.Fatal(err)
	}
	if plan.CUETimeout != cuefront.DefaultEvalTime || plan.Format != "text" || !plan.Refresh || !plan.Lock ||
		plan.ObserveTimeout != runner.DefaultStepTimeout || plan.LockTimeout != 0 || plan.DetailedExitcode || len(plan.Base)+len(plan.Paths.Paths) != 0 {
		t.Errorf("plan defaults = %+v", plan)
	}
	apply, _ := parse[Apply](t)
	if apply.Parallelism != runner.DefaultParallelism || apply.Retries != runner.DefaultRetries || apply.StepTimeout != runner.DefaultStepTimeout || !apply.Refresh {
		t.Errorf("apply defaults = %+v", apply)
	}
	run, _ := parse[PodsRun](t, "-f", "job.yaml")
	if run.Count != 1 || run.Timeout != launch.DefaultTimeout {
		t.Errorf("pods run defaults = %+v", run)
	}
	tok, _ := parse[NodeTokenCreate](t)
	if tok.TTL != membership.DefaultTokenTTL {
		t.Errorf("node token create --ttl default = %v", tok.TTL)
	}
}

func TestSingleDashLongFlags(t *testing.T) {
	a, err := parse[Plan](t, "-out=p.json", "-detailed-exitcode", "-assume-down", "n1", "--base", "../main", "pools/")
	if err != nil {
		t.Fatal(err)
	}
	if a.Out != "p.json" || !a.DetailedExitcode || !reflect.DeepEqual(a.AssumeDown, []string{"n1"}) ||
		!reflect.DeepEqual(a.Base, []string{"../main"}) || !reflect.DeepEqual(a.Paths.Paths, []string{"pools/"}) {
		t.Errorf("plan = %+v", a)
	}
	v, err := parse[Validate](t, "-v", "-strict-memory", "-cue-timeout", "3s")
	if err != nil {
		t.Fatal(err)
	}
	if !v.Verbose || !v.StrictMemory || v.Limits().CUETimeout != 3*time.Second {
		t.Errorf("validate = %+v", v)
	}
}

func TestPositional(t *testing.T) {
	run, err := parse[PodsRun](t, "--count", "3", "pools/", "--", "python", "run.py", "--task", "12")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(run.Paths, []string{"pools/"}) || !reflect.DeepEqual(run.Command, []string{"python", "run.py", "--task", "12"}) || run.Count != 3 {
		t.Errorf("pods run = %+v", run)
	}
	leave, err := parse[NodeName](t, "spark-03", "pools/")
	if err != nil || leave.Node != "spark-03" || !reflect.DeepEqual(leave.Paths, []string{"pools/"}) {
		t.Errorf("node leave = %+v, %v", leave, err)
	}
	push, err := parse[StatePush](t, "--force", "s.json")
	if err != nil || push.File != "s.json" || !push.Force || len(push.Paths) != 0 {
		t.Errorf("state push = %+v, %v", push, err)
	}
}

func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		err  func() error
		want string
	}{
		{"show without a plan", func() error { _, err := parse[Show](t); return err }, "want one PLANFILE, got 0 arguments"},
		{"show with two", func() error { _, err := parse[Show](t, "a", "b"); return err }, "want one PLANFILE, got 2 arguments"},
		{"node leave without a name", func() error { _, err := parse[NodeName](t); return err }, "want the node's NAME"},
		{"force-unlock without an ID", func() error { _, err := parse[ForceUnlock](t); return err }, "want the LOCK_ID"},
		{"state push without a file", func() error { _, err := parse[StatePush](t); return err }, "want the FILE to push"},
		{"unknown flag", func() error { _, err := parse[Fmt](t, "--bogus"); return err }, "unknown flag: --bogus"},
		{"pods run with neither job", func() error { a, _ := parse[PodsRun](t); return a.Check() }, "give a Job manifest with -f or a command after --, not both"},
		{"pods run with no copies", func() error { a, _ := parse[PodsRun](t, "--count", "0", "-f", "j"); return a.Check() }, "--count 0: want at least 1"},
		{"pods status format", func() error { a, _ := parse[PodsStatus](t, "--format", "yaml"); return a.Check() }, `--format "yaml": want text or json`},
		{"plan format", func() error { return PlanFormat("html") }, `unknown --format "html": want text, json or markdown`},
	} {
		err := c.err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := parse[Apply](t, "--help"); !IsHelp(err) {
		t.Errorf("apply --help: %v, want ErrHelp", err)
	}
}

func TestRetries(t *testing.T) {
	for _, c := range []struct{ flag, want int }{{0, -1}, {3, 3}, {-1, -1}} {
		if got := (&Apply{Retries: c.flag}).RunnerRetries(); got != c.want {
			t.Errorf("--retries %d: runner retries %d, want %d", c.flag, got, c.want)
		}
	}
}

// etcd serve's member listens on loopback only, and its program is given
// back the flags it was parsed from.
func TestEtcdServeURLs(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		refusal string // "" when accepted
	}{
		{nil, ""},
		{[]string{"--listen", "localhost:3379", "--listen-peer", "[::1]:3380"}, ""},
		{[]string{"--listen", "0.0.0.0:2379"}, "listens on loopback only"},
		{[]string{"--listen-peer", "192.0.2.1:2380"}, "--listen-peer"},
		{[]string{"--listen", "127.0.0.1"}, "want HOST:PORT"},
		{[]string{"extra"}, "no arguments expected"},
	} {
		a, err := parse[EtcdServe](t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		client, peer, err := a.URLs()
		switch {
		case tc.refusal == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
			t.Errorf("%q: got %v, want a refusal containing %q", tc.args, err, tc.refusal)
		case tc.refusal == "" && (client.Host != a.Listen || peer.Host != a.ListenPeer || client.Scheme != "http"):
			t.Errorf("%q: URLs %v %v", tc.args, client, peer)
		}
		again, err := parse[EtcdServe](t, a.MemberArgs()...)
		if err != nil || again.DataDir != a.DataDir || again.Listen != a.Listen || again.ListenPeer != a.ListenPeer {
			t.Errorf("%q: the member's flags %q parse into %+v (%v)", tc.args, a.MemberArgs(), again, err)
		}
	}
}

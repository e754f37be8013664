// Package testkube runs real Kubernetes control planes on loopback for
// end-to-end tests: one etcd, and per cluster a kube-apiserver (its own
// etcd prefix, a CA and serving certificate made for the test, a static
// admin token) with the kube-controller-manager that enforces quotas,
// deletes namespaces and finishes Jobs. With Options.Kwok each cluster
// also gets kube-scheduler and kwok with one fake node, so Jobs' pods are
// scheduled, run and succeed after Options.RunFor.
//
// The binaries come from .ci/bin (or $POOLC_KUBE_BIN), built by
// `bash .ci/install.d/kube.sh`; without them the test fails saying so.
// Everything is stopped when the test ends.
package testkube

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Missing is the failure message when the Kubernetes binaries are absent.
const Missing = "Kubernetes binaries not found: bash .ci/install.d/kube.sh (builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok into .ci/bin)"

// KwokNode is the name of the fake node kwok runs pods on.
const KwokNode = "kwok-node-0"

//go:embed stages.yaml
var stagesTemplate string

// Options says what to start.
type Options struct {
	// Clusters are the kubeconfig context names, one API server each;
	// empty means one cluster named "kube-a".
	Clusters []string
	// Kwok also starts kube-scheduler and kwok with one fake node, so
	// pods run.
	Kwok bool
	// RunFor is how long a Job's pod runs under kwok before it succeeds;
	// zero means two seconds.
	RunFor time.Duration
	// BareAPIServer starts no kube-controller-manager, to show what the
	// API server does alone: it neither counts nor enforces a quota, and
	// deletes no namespace's contents. It excludes Kwok.
	BareAPIServer bool
}

// Env is a running set of clusters.
type Env struct {
	// Dir holds the certificates, configs and logs.
	Dir string
	// Kubeconfig is a kubeconfig file with one context per cluster, named
	// as the cluster; its current context is the first cluster's.
	Kubeconfig string
	// Clusters are in the order of Options.Clusters.
	Clusters []*Cluster
}

// Cluster is one API server and its controllers.
type Cluster struct {
	// Name is the cluster's kubeconfig context.
	Name string
	// Server is the API server's https URL on 127.0.0.1.
	Server string
	// Config and Client reach the API server as its admin.
	Config *rest.Config
	Client kubernetes.Interface
}

// Cluster returns the cluster of that context name, or nil.
func (e *Env) Cluster(name string) *Cluster {
	for _, c := range e.Clusters {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// BinDir is where the binaries are looked for: $POOLC_KUBE_BIN, else
// .ci/bin at the root of the module.
func BinDir() string {
	if d := os.Getenv("POOLC_KUBE_BIN"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return ".ci/bin"
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module poolc.dev/poolc\n")) {
			return filepath.Join(dir, ".ci", "bin")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ".ci/bin"
		}
		dir = parent
	}
}

// Start starts the clusters for t and stops them when t ends.
func Start(t testing.TB, o Options) *Env {
	t.Helper()
	if len(o.Clusters) == 0 {
		o.Clusters = []string{"kube-a"}
	}
	if o.RunFor <= 0 {
		o.RunFor = 2 * time.Second
	}
	if o.BareAPIServer && o.Kwok {
		t.Fatal("testkube: Kwok needs the controller manager that BareAPIServer leaves out")
	}
	bin := BinDir()
	need := []string{"etcd", "kube-apiserver", "kube-controller-manager"}
	if o.Kwok {
		need = append(need, "kube-scheduler", "kwok")
	}
	for _, n := range need {
		if _, err := os.Stat(filepath.Join(bin, n)); err != nil {
			t.Fatalf("%s: %s missing in %s", Missing, n, bin)
		}
	}
	e := &Env{Dir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	peer := "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	startProc(t, e.Dir, "etcd", filepath.Join(bin, "etcd"),
		"--data-dir", filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "default="+peer,
		"--unsafe-no-fsync", "--log-level", "warn")

	raw := clientcmdapi.NewConfig()
	for i, name := range o.Clusters {
		c := startCluster(ctx, t, e.Dir, bin, name, etcdURL, o)
		e.Clusters = append(e.Clusters, c)
		raw.Clusters[name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.Config.CAData}
		raw.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: c.Config.BearerToken}
		raw.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
		if i == 0 {
			raw.CurrentContext = name
		}
	}
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*raw, e.Kubeconfig); err != nil {
		t.Fatalf("write kubeconfig: %v", err)
	}
	return e
}

func startCluster(ctx context.Context, t testing.TB, root, bin, name, etcdURL string, o Options) *Cluster {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := writeSecrets(dir)
	if err != nil {
		t.Fatalf("cluster %s: certificates: %v", name, err)
	}
	port := freePort(t)
	c := &Cluster{Name: name, Server: "https://127.0.0.1:" + strconv.Itoa(port)}
	api := startProc(t, dir, "kube-apiserver", filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers", etcdURL, "--etcd-prefix", "/"+name,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(port),
		"--tls-cert-file", s.ServerCert, "--tls-private-key-file", s.ServerKey,
		"--client-ca-file", s.CA,
		"--token-auth-file", s.TokenFile,
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", s.SAPub,
		"--service-account-signing-key-file", s.SAKey,
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--cert-dir", filepath.Join(dir, "certs"),
		// No kubelet clears the not-ready taint this plugin puts on new
		// nodes; kwok's node is ready when kwok says so.
		"--disable-admission-plugins", "TaintNodesByCondition",
		// A loopback address cannot be the kubernetes Service endpoint.
		"--endpoint-reconciler-type", "none",
		"--profiling=false")
	ca, err := os.ReadFile(s.CA)
	if err != nil {
		t.Fatal(err)
	}
	c.Config = &rest.Config{
		Host:            c.Server,
		BearerToken:     s.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		QPS:             100, Burst: 200,
		Timeout: 30 * time.Second,
	}
	c.Client, err = kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, api, "kube-apiserver "+name+" ready", func() (bool, error) {
		err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
		return err == nil, nil
	})

	kc := filepath.Join(dir, "admin.kubeconfig")
	one := clientcmdapi.NewConfig()
	one.Clusters[name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: ca}
	one.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: s.Token}
	one.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	one.CurrentContext = name
	if err := clientcmd.WriteToFile(*one, kc); err != nil {
		t.Fatal(err)
	}
	if o.BareAPIServer {
		return c
	}
	// The node lifecycle controller would mark the kwok node NotReady
	// for want of kubelet heartbeats; nothing here needs it.
	kcm := startProc(t, dir, "kube-controller-manager", filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig", kc, "--leader-elect=false", "--secure-port=0",
		"--controllers", "*,-node-lifecycle-controller",
		"--service-account-private-key-file", s.SAKey, "--root-ca-file", s.CA,
		"--concurrent-job-syncs", "20", "--concurrent-ttl-after-finished-syncs", "20")
	// The service-account controller giving "default" its account shows
	// the controller manager is running its controllers.
	waitFor(ctx, t, kcm, "kube-controller-manager "+name+" running", func() (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if !o.Kwok {
		return c
	}
	startProc(t, dir, "kube-scheduler", filepath.Join(bin, "kube-scheduler"),
		"--kubeconfig", kc, "--leader-elect=false", "--secure-port=0")
	stages := filepath.Join(dir, "stages.yaml")
	doc := strings.ReplaceAll(stagesTemplate, "RUN_FOR_MS", strconv.FormatInt(o.RunFor.Milliseconds(), 10))
	if err := os.WriteFile(stages, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	kwok := startProc(t, dir, "kwok", filepath.Join(bin, "kwok"),
		"--kubeconfig", kc, "-c", stages,
		"--manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake")
	_, err = c.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        KwokNode,
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": KwokNode},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("cluster %s: create node: %v", name, err)
	}
	waitFor(ctx, t, kwok, "kwok node of "+name+" ready", func() (bool, error) {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, KwokNode, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	return c
}

// proc is one started binary; its output goes to NAME.log.
type proc struct {
	name, log string
	cmd       *exec.Cmd
	done      chan struct{}
	err       error
}

func startProc(t testing.TB, dir, name, path string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(path, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("%s log (end):\n%s", name, p.tail())
		}
	})
	return p
}

// stop ends the process (TERM, then KILL after ten seconds).
func (p *proc) stop(t testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Logf("%s did not stop on SIGTERM within 10s; killed", p.name)
	}
}

// tail is the end of the process's log, for failure messages.
func (p *proc) tail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls ready until it is true, failing t when the process exits
// first or ctx ends.
func waitFor(ctx context.Context, t testing.TB, p *proc, what string, ready func() (bool, error)) {
	t.Helper()
	var last error
	for {
		ok, err := ready()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-p.done:
			t.Fatalf("%s: %s exited (%v):\n%s", what, p.name, p.err, p.tail())
		case <-ctx.Done():
			t.Fatalf("%s: not within the time allowed (last error: %v); %s log:\n%s", what, errors.Join(last, ctx.Err()), p.name, p.tail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Describe is a one-line summary of the env, for test logs.
func (e *Env) Describe() string {
	var parts []string
	for _, c := range e.Clusters {
		parts = append(parts, fmt.Sprintf("%s=%s", c.Name, c.Server))
	}
	return strings.Join(parts, " ")
}

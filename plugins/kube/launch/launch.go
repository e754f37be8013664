// Package launch admits Jobs to a pod pool: a Job goes to the first
// member, in priority order, whose API server accepts it. The member's
// ResourceQuota on count/jobs.batch (set up by package kube) is the cap:
// the API server refuses a Job over it atomically, whoever creates it, so
// launchers in many processes on many hosts can never over-fill a member.
// On a quota refusal the next member is tried; when every member is full
// the launcher waits, polling the quotas' use, until one has room or the
// timeout passes.
//
// The quota alone does not hold the cap exactly: its controller recounts
// use from a cache that can lag behind Jobs just created, and then lets
// one Job too many in (seen here: 3 active Jobs under a quota of 2 while
// 60 Jobs churned). Launchers therefore admit a Job while holding the
// member's admission Lease, counting the pool's unfinished Jobs with a
// consistent list first; the quota remains the backstop for Jobs made
// without poolc. The cap poolc holds is on unfinished Jobs, read from the
// quota's spec.hard, so the cluster stays the one source of it.
//
// A quota on count/jobs.batch counts every Job object, finished or not,
// until it is deleted. Launched Jobs therefore get
// ttlSecondsAfterFinished (DefaultTTL unless the manifest sets one): the
// TTL controller deletes a Job when it finishes, which frees its slot.
package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"poolc.dev/poolc/plugins/kube"
)

// Defaults of Options.
const (
	// DefaultTTL is the ttlSecondsAfterFinished a Job gets when its
	// manifest sets none: deleted as soon as it finishes, so its quota
	// slot frees at once.
	DefaultTTL int32 = 0
	// DefaultTimeout bounds the wait for a free member.
	DefaultTimeout = 10 * time.Minute
	// DefaultPoll is how often a waiting launcher reads the quotas.
	DefaultPoll = time.Second
	// DefaultProgressEvery is how often a waiting launcher says so.
	DefaultProgressEvery = 10 * time.Second
)

// Clients gives the API client of a member's context; *kube.Kubeconfig
// is one.
type Clients interface {
	Client(ctx context.Context, context string) (kubernetes.Interface, error)
}

// Options says how long to wait and where to say so.
type Options struct {
	// Timeout bounds the wait when every member is full; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// Poll is how often the quotas are read while waiting; zero means
	// DefaultPoll. Each wait is jittered by up to half of it, so
	// launchers started together do not ask in step.
	Poll time.Duration
	// Progress, when set, gets a line every ProgressEvery (zero means
	// DefaultProgressEvery) while the launcher waits.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// Placed says where a Job went.
type Placed struct {
	Context, Namespace, Job string
	// Refused lists the members (contexts) of higher priority whose quota
	// refused the Job on the attempt that placed it.
	Refused []string
	// Skipped says, one line per member, why a member was not tried: its
	// registry has no verified copy of the image the Job runs.
	Skipped []string
	// Waited is how long the launcher waited for room.
	Waited time.Duration
}

// FullError is the error when no member had room within the timeout.
type FullError struct {
	Pool   string
	Waited time.Duration
	Use    string
}

// Error implements error.
func (e *FullError) Error() string {
	return fmt.Sprintf("pod pool %s: every member stayed full for %s (%s)", e.Pool, e.Waited.Round(time.Second), e.Use)
}

// Submit creates the Job on the first member of members (in priority
// order) that admits it, waiting while all are full. The Job's namespace
// is the member's; it gets the pool's labels, a generated name
// (POOL-xxxxx) when it has none, and DefaultTTL when it sets no TTL.
// Errors other than a quota refusal (an unreachable member, a missing
// namespace) skip that member; when no member can take Jobs at all the
// error names each one's problem. A member whose registry has no verified
// copy of the pool's image (kube.ImageCopy.Unverified) is never tried for
// a Job that runs that image: the Job goes to another member with room.
func Submit(ctx context.Context, cl Clients, members []kube.Member, job *batchv1.Job, o Options) (Placed, error) {
	if len(members) == 0 {
		return Placed{}, errors.New("the pod pool has no members")
	}
	members, skipped := Runnable(members, job)
	if len(members) == 0 {
		return Placed{}, fmt.Errorf("no member can run the Job: %s", strings.Join(skipped, "; "))
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = DefaultProgressEvery
	}
	pool := members[0].Pool
	holder := holderID()
	start := time.Now()
	deadline := start.Add(o.Timeout)
	nextProgress := start.Add(o.ProgressEvery)
	// room is nil on the first pass: every member is tried; afterwards
	// only members whose quota shows room are.
	var room map[string]bool
	for {
		var refused []string
		problems := slices.Clone(skipped)
		for _, m := range members {
			if room != nil && !room[m.Context] {
				refused = append(refused, m.Context)
				continue
			}
			cs, err := cl.Client(ctx, m.Context)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			created, full, err := admit(ctx, cs, m, job, holder)
			switch {
			case err == nil && !full:
				return Placed{Context: m.Context, Namespace: m.Namespace, Job: created.Name, Refused: refused, Skipped: skipped, Waited: time.Since(start)}, nil
			case full:
				refused = append(refused, m.Context)
			case ctx.Err() != nil:
				return Placed{}, ctx.Err()
			default:
				problems = append(problems, fmt.Sprintf("member %s: %v", m.Context, err))
			}
		}
		if len(refused) == 0 {
			return Placed{}, fmt.Errorf("pod pool %s: no member can take Jobs: %s", pool, strings.Join(problems, "; "))
		}
		for {
			use := Use(ctx, cl, members)
			room = map[string]bool{}
			for _, u := range use {
				room[u.Context] = u.Err == nil && u.Counted && u.Used < u.Capacity
			}
			if hasRoom(room) {
				break
			}
			now := time.Now()
			if !now.Before(deadline) {
				return Placed{}, &FullError{Pool: pool, Waited: now.Sub(start), Use: describe(use)}
			}
			if o.Progress != nil && !now.Before(nextProgress) {
				fmt.Fprintf(o.Progress, "waiting for room in pod pool %s: %s; waited %s of %s\n",
					pool, describe(use), now.Sub(start).Round(time.Second), o.Timeout)
				nextProgress = now.Add(o.ProgressEvery)
			}
			wait := o.Poll/2 + rand.N(o.Poll/2+1)
			select {
			case <-ctx.Done():
				return Placed{}, ctx.Err()
			case <-time.After(min(wait, time.Until(deadline)+time.Millisecond)):
			}
		}
	}
}

// Runnable splits members into those that may run job and, one line
// each, why the others may not: the Job runs the pod pool's image and the
// member's registry has no verified copy of it.
func Runnable(members []kube.Member, job *batchv1.Job) (ok []kube.Member, skipped []string) {
	for _, m := range members {
		if m.Image.Unverified != "" && m.Image.To == "" && runs(job, m.Image.From) {
			skipped = append(skipped, fmt.Sprintf("member %s skipped: %s", m.Context, m.Image.Unverified))
			continue
		}
		ok = append(ok, m)
	}
	return ok, skipped
}

// runs reports whether a container of job (an init container too) runs
// image.
func runs(job *batchv1.Job, image string) bool {
	pod := job.Spec.Template.Spec
	for _, cs := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
		for _, c := range cs {
			if c.Image == image {
				return true
			}
		}
	}
	return false
}

func hasRoom(room map[string]bool) bool {
	for _, ok := range room {
		if ok {
			return true
		}
	}
	return false
}

// forMember is the Job as it is created on m.
func forMember(job *batchv1.Job, m kube.Member) *batchv1.Job {
	j := job.DeepCopy()
	j.Namespace = m.Namespace
	j.ResourceVersion = ""
	j.Labels = maps.Clone(j.Labels)
	if j.Labels == nil {
		j.Labels = map[string]string{}
	}
	j.Labels[kube.LabelManagedBy] = kube.ManagedBy
	j.Labels[kube.LabelPodPool] = m.Pool
	if j.Name == "" && j.GenerateName == "" {
		j.GenerateName = m.Pool + "-"
	}
	if j.Spec.TTLSecondsAfterFinished == nil {
		ttl := DefaultTTL
		j.Spec.TTLSecondsAfterFinished = &ttl
	}
	if m.Image.To != "" {
		pod := &j.Spec.Template.Spec
		for _, cs := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
			for i := range cs {
				if cs[i].Image == m.Image.From {
					cs[i].Image = m.Image.To
				}
			}
		}
	}
	return j
}

// QuotaRefusal reports whether the API server refused a create because
// of a ResourceQuota: the quota is used up, or the quota controller has
// not counted it yet (then the API server admits nothing it limits).
func QuotaRefusal(err error) bool {
	if !apierrors.IsForbidden(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "exceeded quota") || strings.Contains(msg, "status unknown for quota")
}

// MemberUse is a member's Job quota as its API server reports it.
type MemberUse struct {
	Context, Namespace string
	// Used and Capacity are the quota's count/jobs.batch use and limit.
	Used, Capacity int64
	// Counted is false until the quota controller has counted the quota.
	Counted bool
	// Err is why the quota could not be read.
	Err error
}

// Use reads each member's quota, in the members' order.
func Use(ctx context.Context, cl Clients, members []kube.Member) []MemberUse {
	out := make([]MemberUse, 0, len(members))
	for _, m := range members {
		u := MemberUse{Context: m.Context, Namespace: m.Namespace}
		cs, err := cl.Client(ctx, m.Context)
		if err == nil {
			var q *quotaView
			q, err = readQuota(ctx, cs, m.Namespace)
			if err == nil {
				u.Used, u.Capacity, u.Counted = q.used, q.hard, q.counted
			}
		}
		u.Err = err
		out = append(out, u)
	}
	return out
}

type quotaView struct {
	used, hard int64
	counted    bool
}

func readQuota(ctx context.Context, cs kubernetes.Interface, namespace string) (*quotaView, error) {
	q, err := cs.CoreV1().ResourceQuotas(namespace).Get(ctx, kube.QuotaName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("namespace %s has no quota %s (run poolc apply)", namespace, kube.QuotaName)
	}
	if err != nil {
		return nil, err
	}
	hard := q.Spec.Hard[kube.JobCount]
	used, counted := q.Status.Used[kube.JobCount]
	return &quotaView{used: used.Value(), hard: hard.Value(), counted: counted}, nil
}

func describe(use []MemberUse) string {
	parts := make([]string, 0, len(use))
	for _, u := range use {
		switch {
		case u.Err != nil:
			parts = append(parts, u.Context+" unreachable")
		case !u.Counted:
			parts = append(parts, fmt.Sprintf("%s ?/%d (not counted yet)", u.Context, u.Capacity))
		default:
			parts = append(parts, fmt.Sprintf("%s %d/%d", u.Context, u.Used, u.Capacity))
		}
	}
	return strings.Join(parts, ", ")
}

package launch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"poolc.dev/poolc/plugins/kube"
)

// leaseSeconds is how long an admission lease is held at most: a
// launcher that dies holding it blocks the member's admissions no longer.
const leaseSeconds = 5

// admit creates the Job on m while holding the member's admission lease
// (kube.AdmissionLease, taken by compare-and-swap on its resourceVersion),
// after counting the pool's unfinished Jobs with a consistent list: so
// launchers anywhere admit one at a time against what the API server
// stores. full is true when the member has no room. The ResourceQuota
// stays the backstop for Jobs made without poolc; on its own it can be
// over-filled, because its controller recounts from a cache that may lag
// behind the Jobs just created.
func admit(ctx context.Context, cs kubernetes.Interface, m kube.Member, job *batchv1.Job, holder string) (created *batchv1.Job, full bool, err error) {
	release, err := acquire(ctx, cs, m, holder)
	if err != nil {
		return nil, false, err
	}
	defer release()
	q, err := readQuota(ctx, cs, m.Namespace)
	if err != nil {
		return nil, false, err
	}
	jobs, err := cs.BatchV1().Jobs(m.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelPodPool + "=" + m.Pool})
	if err != nil {
		return nil, false, fmt.Errorf("list Jobs: %w", err)
	}
	active := int64(0)
	for i := range jobs.Items {
		if !kube.Finished(&jobs.Items[i]) {
			active++
		}
	}
	if active >= q.hard {
		return nil, true, nil
	}
	created, err = cs.BatchV1().Jobs(m.Namespace).Create(ctx, forMember(job, m), metav1.CreateOptions{})
	if QuotaRefusal(err) {
		return nil, true, nil
	}
	return created, false, err
}

// acquire takes the member's admission lease, waiting while another
// launcher holds it, and returns the function that gives it back.
func acquire(ctx context.Context, cs kubernetes.Interface, m kube.Member, holder string) (func(), error) {
	api := cs.CoordinationV1().Leases(m.Namespace)
	for {
		l, err := api.Get(ctx, kube.AdmissionLease, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			l, err = api.Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{
				Name: kube.AdmissionLease, Namespace: m.Namespace, Labels: m.Labels(),
			}}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
		}
		if err != nil {
			return nil, fmt.Errorf("admission lease: %w", err)
		}
		now := time.Now()
		if free(l, now) {
			d := int32(leaseSeconds)
			micro := metav1.NewMicroTime(now)
			l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.AcquireTime, l.Spec.RenewTime = &holder, &d, &micro, &micro
			held, err := api.Update(ctx, l, metav1.UpdateOptions{})
			switch {
			case err == nil:
				return func() {
					empty := ""
					held.Spec.HolderIdentity = &empty
					// A lease someone took over after it expired is
					// theirs; a conflict here is theirs to keep.
					_, _ = api.Update(context.WithoutCancel(ctx), held, metav1.UpdateOptions{})
				}, nil
			case !apierrors.IsConflict(err):
				return nil, fmt.Errorf("admission lease: %w", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(5+rand.IntN(20)) * time.Millisecond):
		}
	}
}

// free reports whether nobody holds the lease, or its holder let it
// expire.
func free(l *coordv1.Lease, now time.Time) bool {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.After(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// holderID names this launcher in the leases it takes.
func holderID() string {
	host, _ := os.Hostname()
	return host + "/" + strconv.Itoa(os.Getpid()) + "/" + strconv.FormatUint(rand.Uint64(), 36)
}

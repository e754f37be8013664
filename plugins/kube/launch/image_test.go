package launch

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"poolc.dev/poolc/plugins/kube"
)

// On a member that serves a copy of the pool's image, the Job's
// containers of that image (init containers too) run the copy; other
// containers keep theirs, and so does a member with no copy.
func TestForMemberRunsTheRegistrysCopy(t *testing.T) {
	job := CommandJob("harness:v1", []string{"run"})
	job.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "harness:v1"}}
	job.Spec.Template.Spec.Containers = append(job.Spec.Template.Spec.Containers, corev1.Container{Name: "side", Image: "busybox:1"})
	to := "k3d-reg-b:5051/harness@sha256:" + "ab"
	m := kube.Member{Pool: "jobs", Context: "b", Namespace: "jobs", Capacity: 1, Image: kube.ImageCopy{From: "harness:v1", To: to}}
	pod := forMember(job, m).Spec.Template.Spec
	if pod.Containers[0].Image != to || pod.InitContainers[0].Image != to || pod.Containers[1].Image != "busybox:1" {
		t.Errorf("containers %+v, init %+v; want the pool's image replaced by %s", pod.Containers, pod.InitContainers, to)
	}
	if job.Spec.Template.Spec.Containers[0].Image != "harness:v1" {
		t.Errorf("the Job given was changed")
	}
	m.Image = kube.ImageCopy{}
	if got := forMember(job, m).Spec.Template.Spec.Containers[0].Image; got != "harness:v1" {
		t.Errorf("a member without a copy runs %s, want harness:v1", got)
	}
}

// A member whose registry has no verified copy of the pool's image is
// not tried for a Job of that image, and when no member has one the
// error says, per member, why; a Job of another image may go anywhere.
func TestRunnableSkipsAMemberWithoutAVerifiedCopy(t *testing.T) {
	members := []kube.Member{
		{Pool: "jobs", Context: "a", Image: kube.ImageCopy{From: "harness:v1", Unverified: "the last sync there failed"}},
		{Pool: "jobs", Context: "b", Image: kube.ImageCopy{From: "harness:v1", To: "k3d-reg-b:5051/harness@sha256:ab"}},
	}
	ok, skipped := Runnable(members, CommandJob("harness:v1", []string{"run"}))
	if len(ok) != 1 || ok[0].Context != "b" || len(skipped) != 1 || skipped[0] != "member a skipped: the last sync there failed" {
		t.Errorf("runnable %v, skipped %q", ok, skipped)
	}
	if ok, _ := Runnable(members, CommandJob("busybox:1", []string{"true"})); len(ok) != 2 {
		t.Errorf("a Job of another image: runnable %v, want both", ok)
	}
	_, err := Submit(context.Background(), nil, members[:1], CommandJob("harness:v1", nil), Options{})
	if err == nil || !strings.Contains(err.Error(), "member a skipped: the last sync there failed") {
		t.Errorf("no member with a copy: %v", err)
	}
}

package kube

import (
	"fmt"
	"regexp"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels and names of the objects poolc makes. Every object carries
// LabelManagedBy=ManagedBy and LabelPodPool=<pod pool>; remove deletes only
// objects that carry both, with the member's pod pool.
const (
	// LabelManagedBy is the label saying which tool manages an object.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is LabelManagedBy's value on every object poolc makes.
	ManagedBy = "poolc"
	// LabelPodPool is the label naming the pod pool an object belongs to.
	LabelPodPool = "poolc.dev/pod-pool"

	// AdmissionLease is the Lease launchers hold while they admit a Job
	// to the member (see package launch).
	AdmissionLease = "poolc-admission"
	// QuotaName is the ResourceQuota that caps the member's Jobs.
	QuotaName = "poolc-jobs"
	// LimitRangeName is the LimitRange giving pods the pool's memory limit.
	LimitRangeName = "poolc-pod-memory"
	// RegistryNamespace is the namespace where KEP-1755 publishes a
	// cluster's local registry.
	RegistryNamespace = "kube-public"
	// RegistryConfigMap is the ConfigMap, in RegistryNamespace, where
	// KEP-1755 publishes a cluster's local registry.
	RegistryConfigMap = "local-registry-hosting"
	// RegistryKey is the key of the registry's document in
	// RegistryConfigMap.
	RegistryKey = "localRegistryHosting.v1"
)

// JobCount is the quota resource that counts a namespace's Jobs. It counts
// every Job object, finished or not, until the Job is deleted: launched
// Jobs therefore get ttlSecondsAfterFinished (see package launch) so the
// TTL controller deletes them, and the quota frees their slot, when they
// finish.
const JobCount corev1.ResourceName = "count/jobs.batch"

// Member is one cluster of a pod pool as the kube actuator sets it up.
type Member struct {
	// Pool is the pod pool's name; it labels every object made.
	Pool string
	// Context is the kubeconfig context of the member's cluster.
	Context string
	// Namespace is where the pool's Jobs run.
	Namespace string
	// Capacity is the number of Jobs the namespace holds at once (>= 1).
	Capacity int
	// Registry is the member's image registry as NAME:PORT, or "".
	Registry string
	// PodMemoryGB is the memory limit each container gets by default and
	// may not exceed, in GB (10^9 bytes); 0 sets none.
	PodMemoryGB float64
	// Image, when its To is set, is the pod pool's image as the member's
	// registry serves it: a Job placed on the member runs each container
	// whose image is From from To instead (see package synced).
	Image ImageCopy
}

// ImageCopy is an image (From, as the pod pool gives it) and the copy of
// it a member's registry serves (To: REGISTRY/REPOSITORY@DIGEST). When
// the pod pool copies its image to the member's registry but no copy
// there is verified, To is empty and Unverified says why: a Job running
// From is then not placed on the member.
type ImageCopy struct {
	From, To   string
	Unverified string
}

var registryRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?:[0-9]{1,5}$`)

// Check reports the first problem that would make the member's objects
// invalid, before any request is made.
func (m Member) Check() error {
	if m.Context == "" {
		return fmt.Errorf("member of pod pool %q has no kube context", m.Pool)
	}
	if errs := validation.IsDNS1123Label(m.Namespace); len(errs) > 0 {
		return fmt.Errorf("member %s: namespace %q: %s", m.Context, m.Namespace, errs[0])
	}
	if errs := validation.IsValidLabelValue(m.Pool); len(errs) > 0 || m.Pool == "" {
		return fmt.Errorf("member %s: pod pool name %q cannot be a label value", m.Context, m.Pool)
	}
	if m.Capacity < 1 {
		return fmt.Errorf("member %s: capacity %d, want at least 1", m.Context, m.Capacity)
	}
	if m.Registry != "" {
		if !registryRE.MatchString(m.Registry) {
			return fmt.Errorf("member %s: registry %q is not NAME:PORT", m.Context, m.Registry)
		}
	}
	if m.PodMemoryGB < 0 {
		return fmt.Errorf("member %s: pod memory %g GB is negative", m.Context, m.PodMemoryGB)
	}
	return nil
}

// PodMemory is the pool's pod memory limit as a quantity; ok is false when
// none is set.
func (m Member) PodMemory() (q resource.Quantity, ok bool) {
	if m.PodMemoryGB <= 0 {
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(strconv.FormatFloat(m.PodMemoryGB, 'f', -1, 64) + "G")
	if err != nil { // unreachable for a finite positive float
		return resource.Quantity{}, false
	}
	return q, true
}

// Labels are the labels of every object poolc makes for the member.
func (m Member) Labels() map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelPodPool: m.Pool}
}

// ours reports whether an object's labels say poolc made it for the pool.
func ours(labels map[string]string, pool string) bool {
	return labels[LabelManagedBy] == ManagedBy && labels[LabelPodPool] == pool
}
